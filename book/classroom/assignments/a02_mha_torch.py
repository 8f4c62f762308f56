"""Assignment 2, multi-head attention in PyTorch (``assignments/02_mha_torch.ipynb``): its hidden
cases, the answers that check they are fair, and the demo's partly wrong solution.

Its module is cross-attention (queries from one sequence, keys and values from another of
another length, a (T, S) mask), which the book does not print: chapter 4's listing is
self-attention, and copied as it is it does not pass
(tests/classroom/test_classroom_listings.py)."""

from __future__ import annotations

import numpy as np

from ..cases import Answer, Assignment, Case, Written
from ..compare import close_to, shaped
from ..feedback import Text as say

# The instructor notebook (assignments/<STEM>.ipynb) and otter's name for the assignment,
# stored in the student notebooks' metadata.
STEM, NAME = "02_mha_torch", "attention-02-mha-torch"
# The chapter pages (book.chapters.CHAPTERS) it draws on: the teacher's plan hands it out
# only once they are taught (tests/site/test_plan_order.py).
DRAWS_ON = ("03_walkthrough", "04_pytorch")
# The demo's partly wrong solution: (a line of the solution, its wrong version) pairs, each
# found exactly once in the solution.
PARTIAL_MISTAKES = (
    ("return x.view(batch, seq_len, n_heads, d_model // n_heads).transpose(1, 2)",
     "return x.reshape(batch, n_heads, seq_len, d_model // n_heads)"),  # mixes heads/tokens
)


# ---- the hidden cases ------------------------------------------------------------------------

def _random_state(rng: np.random.Generator, d: int) -> dict:
    state = {}
    for name in ("w_q", "w_k", "w_v", "w_o"):
        state[f"{name}.weight"] = rng.normal(scale=d ** -0.5, size=(d, d))
        state[f"{name}.bias"] = rng.normal(scale=0.1, size=(d,))
    return state


def hidden_cases(rng: np.random.Generator) -> list[Case]:
    import torch

    from book.ideas.masks import to_torch_attn_mask
    from book.ideas.mha import MultiHeadSelfAttention, from_torch_mha

    cases = []
    q = "q1_split_heads"
    cases.append(Case(question=q, name=say("classroom.case_shape"), points=1, public=True,
                      function="split_heads", args=[np.zeros((2, 5, 8)), 4],
                      check=shaped((2, 4, 5, 2)), tensor_args=True))
    for points, (b, t, d, h) in zip((5, 4), ((2, 3, 8, 4), (3, 5, 12, 3)), strict=True):
        x = rng.normal(size=(b, t, d))
        expected = MultiHeadSelfAttention(d, h).split_heads(torch.from_numpy(x)).numpy()
        cases.append(Case(question=q, name=say("classroom.case_split", b=b, t=t, d=d, h=h),
                          points=points, function="split_heads", args=[x, h],
                          check=close_to(expected), tensor_args=True))

    # Cross-attention, which the book does not print (chapter 4's module is self-attention):
    # queries from x (batch, T, d), keys and values from memory (batch, S, d), S != T, and a
    # (T, S) mask. The reference is PyTorch's own layer called as nn.MultiheadAttention(x,
    # memory, memory), its weights copied into the student's module.
    q = "q2_module"
    cases.append(Case(question=q, name=say("classroom.case_output_shape"), points=1, public=True,
                      function="MultiHeadCrossAttention",
                      args=[rng.normal(size=(2, 4, 8)), rng.normal(size=(2, 6, 8))],
                      check=shaped((2, 4, 8)), recipe="module", init=[8, 2],
                      state=_random_state(rng, 8), tensor_args=True))
    for points, (h, t, s, masked) in zip((4, 5), ((2, 5, 3, False), (4, 3, 7, True)),
                                         strict=True):
        torch.manual_seed(int(rng.integers(2**31)))
        reference = torch.nn.MultiheadAttention(8, h, batch_first=True).double()
        state = {k: v.numpy() for k, v in from_torch_mha(reference).state_dict().items()}
        x, memory = rng.normal(size=(3, t, 8)), rng.normal(size=(3, s, 8))
        args, attn = [x, memory], None
        if masked:  # each query may attend to a random part of the memory, never to none
            allowed = rng.random((t, s)) < 0.6
            allowed[np.arange(t), rng.integers(s, size=t)] = True
            args, attn = [x, memory, allowed], to_torch_attn_mask(torch.from_numpy(allowed))
        xt, mt = torch.from_numpy(x), torch.from_numpy(memory)
        with torch.no_grad():
            expected = reference(xt, mt, mt, attn_mask=attn, need_weights=False)[0].numpy()
            itself = reference(xt, xt, xt, need_weights=False)[0].numpy()
        like = [] if masked else [(itself, say("classroom.hint_self_attention"))]
        name = say("classroom.case_cross_masked" if masked else "classroom.case_cross",
                   h=h, t=t, s=s)
        cases.append(Case(question=q, name=name, points=points,
                          function="MultiHeadCrossAttention", args=args,
                          check=close_to(expected, like=like), recipe="module", init=[8, h],
                          state=state, tensor_args=True))
    return cases


# ---- answers that must not (constant ones) and must (float32 ones) earn the marks ------------

def constants() -> dict[str, Answer]:
    import torch
    from torch import nn

    def module(forward):
        class MultiHeadCrossAttention(nn.Module):
            def __init__(self, d_model, n_heads):
                super().__init__()
                self.n_heads = n_heads
                self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model)
                                                          for _ in range(4))

            def forward(self, x, memory, mask=None):
                return forward(self, x, memory)
        return MultiHeadCrossAttention

    def split_shape(x, n_heads):
        b, t, d = x.shape
        return b, n_heads, t, d // n_heads

    def uniform(self, x, memory):  # every query weighs every memory position alike
        mean = self.w_v(memory).mean(dim=1, keepdim=True)
        return self.w_o(mean).expand(x.shape[0], x.shape[1], -1)

    return {
        "zeros": {"split_heads": lambda x, h: torch.zeros(split_shape(x, h), dtype=x.dtype),
                  "MultiHeadCrossAttention": module(lambda self, x, m: torch.zeros_like(x))},
        "ones": {"split_heads": lambda x, h: torch.ones(split_shape(x, h), dtype=x.dtype),
                 "MultiHeadCrossAttention": module(lambda self, x, m: torch.ones_like(x))},
        "the input": {"split_heads": lambda x, h: x.reshape(split_shape(x, h)),
                      "MultiHeadCrossAttention": module(lambda self, x, m: x)},
        "values only": {"MultiHeadCrossAttention": module(
            lambda self, x, m: self.w_o(self.w_v(x)))},
        "uniform": {"MultiHeadCrossAttention": module(uniform)},
    }


def float32() -> Answer:
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    def split_heads(x, n_heads):
        b, t, d = x.shape
        return x.float().view(b, t, n_heads, d // n_heads).transpose(1, 2)

    class MultiHeadCrossAttention(nn.Module):  # the harness makes it double; float32 inside
        def __init__(self, d_model, n_heads):
            super().__init__()
            self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
            self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model)
                                                      for _ in range(4))

        def forward(self, x, memory, mask=None):
            def lin(layer, t):
                return F.linear(t, layer.weight.float(), layer.bias.float())
            x, memory = x.float(), memory.float()
            b, t, _ = x.shape
            q = split_heads(lin(self.w_q, x), self.n_heads)
            k, v = (split_heads(lin(w, memory), self.n_heads) for w in (self.w_k, self.w_v))
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            context = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(
                b, t, self.d_model)
            return lin(self.w_o, context)

    return {"split_heads": split_heads, "MultiHeadCrossAttention": MultiHeadCrossAttention}


ASSIGNMENT = Assignment(stem=STEM, name=NAME, build=hidden_cases, constants=constants,
                        float32=float32, partial_mistakes=PARTIAL_MISTAKES,
                        draws_on=DRAWS_ON,
                        written=Written(rubric=say("classroom.rubric_02")))
