"""Assignment 2, multi-head attention in PyTorch (``assignments/02_mha_torch.ipynb``): its hidden
cases, the answers that check they are fair, and the demo's partly wrong solution."""

from __future__ import annotations

import numpy as np

from ..cases import Answer, Assignment, Case
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

    from book.ideas.masks import causal_mask, to_torch_attn_mask
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

    q = "q2_module"
    cases.append(Case(question=q, name=say("classroom.case_output_shape"), points=1, public=True,
                      function="MultiHeadAttention", args=[rng.normal(size=(2, 4, 8))],
                      check=shaped((2, 4, 8)), recipe="module", init=[8, 2],
                      state=_random_state(rng, 8), tensor_args=True))
    for points, (h, t, masked) in zip((4, 5), ((2, 5, False), (4, 6, True)), strict=True):
        torch.manual_seed(int(rng.integers(2**31)))
        reference = torch.nn.MultiheadAttention(8, h, batch_first=True).double()
        state = {k: v.numpy() for k, v in from_torch_mha(reference).state_dict().items()}
        x = rng.normal(size=(3, t, 8))
        args, attn = [x], None
        if masked:
            mask = causal_mask(t)
            args, attn = [x, mask.numpy()], to_torch_attn_mask(mask)
        xt = torch.from_numpy(x)
        with torch.no_grad():
            expected = reference(xt, xt, xt, attn_mask=attn, need_weights=False)[0].numpy()
        name = say("classroom.case_heads_causal" if masked else "classroom.case_heads", h=h)
        cases.append(Case(question=q, name=name, points=points, function="MultiHeadAttention",
                          args=args, check=close_to(expected), recipe="module", init=[8, h],
                          state=state, tensor_args=True))
    return cases


# ---- answers that must not (constant ones) and must (float32 ones) earn the marks ------------

def constants() -> dict[str, Answer]:
    import torch
    from torch import nn

    def module(forward):
        class MultiHeadAttention(nn.Module):
            def __init__(self, d_model, n_heads):
                super().__init__()
                self.n_heads = n_heads
                self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model)
                                                          for _ in range(4))

            def forward(self, x, mask=None):
                return forward(self, x)
        return MultiHeadAttention

    def split_shape(x, n_heads):
        b, t, d = x.shape
        return b, n_heads, t, d // n_heads

    return {
        "zeros": {"split_heads": lambda x, h: torch.zeros(split_shape(x, h), dtype=x.dtype),
                  "MultiHeadAttention": module(lambda self, x: torch.zeros_like(x))},
        "ones": {"split_heads": lambda x, h: torch.ones(split_shape(x, h), dtype=x.dtype),
                 "MultiHeadAttention": module(lambda self, x: torch.ones_like(x))},
        "the input": {"split_heads": lambda x, h: x.reshape(split_shape(x, h)),
                      "MultiHeadAttention": module(lambda self, x: x)},
        "values only": {"MultiHeadAttention": module(lambda self, x: self.w_o(self.w_v(x)))},
    }


def float32() -> Answer:
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    def split_heads(x, n_heads):
        b, t, d = x.shape
        return x.float().view(b, t, n_heads, d // n_heads).transpose(1, 2)

    class MultiHeadAttention(nn.Module):  # the harness makes it double; it computes in float32
        def __init__(self, d_model, n_heads):
            super().__init__()
            self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
            self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model)
                                                      for _ in range(4))

        def forward(self, x, mask=None):
            def lin(layer, t):
                return F.linear(t, layer.weight.float(), layer.bias.float())
            x = x.float()
            b, t, _ = x.shape
            q, k, v = (split_heads(lin(w, x), self.n_heads) for w in (self.w_q, self.w_k,
                                                                     self.w_v))
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            context = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(
                b, t, self.d_model)
            return lin(self.w_o, context)

    return {"split_heads": split_heads, "MultiHeadAttention": MultiHeadAttention}


ASSIGNMENT = Assignment(stem=STEM, name=NAME, build=hidden_cases, constants=constants,
                        float32=float32, partial_mistakes=PARTIAL_MISTAKES,
                        draws_on=DRAWS_ON)
