"""Assignment 4, grouped-query attention with a KV cache (``assignments/04_gqa.ipynb``): its hidden
cases, the answers that check they are fair, and the demo's partly wrong solution.

Its query heads are interleaved: query head i reads key/value head ``i % n_kv_heads``, the
convention the book does not print (chapter 11's ``attend`` and SDPA's ``enable_gqa`` use
consecutive groups, ``i // group``); copied as it is, the book's code does not pass
(tests/classroom/test_classroom_listings.py)."""

from __future__ import annotations

import numpy as np

from ..cases import Answer, Assignment, Case, Written, int_constants
from ..compare import close_to, in_range, number, shaped
from ..feedback import Text as say

# The instructor notebook (assignments/<STEM>.ipynb) and otter's name for the assignment,
# stored in the student notebooks' metadata.
STEM, NAME = "04_gqa", "attention-04-gqa"
# The chapter pages (book.chapters.CHAPTERS) it draws on: the teacher's plan hands it out
# only once they are taught (tests/site/test_plan_order.py).
DRAWS_ON = ("09b_serving", "11_modern")
# The demo's partly wrong solution: (a line of the solution, its wrong version) pairs, each
# found exactly once in the solution.
PARTIAL_MISTAKES = (
    ("return query_head % n_kv_heads",
     "return query_head // (n_heads // n_kv_heads)"),  # the book's consecutive groups
    ("return 2 * n_layers * n_tokens * n_kv_heads * d_head * bytes_per_number",
     "return 2 * n_layers * n_tokens * d_head * bytes_per_number"),  # forgets the heads
)


# ---- the hidden cases ------------------------------------------------------------------------

def _gqa_reference(q, k, v, causal: bool, interleaved: bool = True) -> np.ndarray:
    """torch's own kernel on key/value heads laid out for the query heads: tiled (query head i
    reads key/value head i % n_kv_heads, this assignment's convention) or, with
    ``interleaved=False``, consecutive groups (i // group: chapter 11's and enable_gqa's)."""
    import torch
    import torch.nn.functional as F

    group = len(q) // len(k)
    if interleaved:
        k, v = np.tile(k, (group, 1, 1)), np.tile(v, (group, 1, 1))
    with torch.no_grad():
        out = F.scaled_dot_product_attention(
            torch.from_numpy(q)[None], torch.from_numpy(k)[None], torch.from_numpy(v)[None],
            is_causal=causal, enable_gqa=not interleaved)
    return out[0].numpy()


def _gqa_check(args, causal: bool):
    """The reference, and the hint for the book's convention where it gives another answer."""
    consecutive = _gqa_reference(*args, causal, interleaved=False)
    return close_to(_gqa_reference(*args, causal),
                    like=[(consecutive, say("classroom.hint_consecutive_groups"))])


def _interleaved_head(rng, n_heads: int, n_kv: int, avoid: set) -> int:
    """A query head of n_heads whose key/value head (i % n_kv) is neither 0, n_kv - 1, the
    head itself, the book's consecutive answer (i // group) nor one of ``avoid``."""
    group = n_heads // n_kv
    heads = [h for h in range(n_heads) if h % n_kv not in {0, n_kv - 1, h, h // group, *avoid}]
    return int(rng.choice(heads))


def hidden_cases(rng: np.random.Generator) -> list[Case]:
    from book.ideas.gqa import kv_head_of

    def kv_head(h, n, g):  # this assignment's convention: interleaved heads
        return h % g

    cases = []
    q = "q1_kv_head"
    cases.append(Case(question=q, name=say("classroom.case_in_range"), points=1, public=True,
                      function="kv_head", args=[5, 8, 2], check=in_range(2)))
    # (0, 4, 4) and (7, 8, 1) are right for `return 0` (and the first for `return query_head`
    # and for the book's i // group): they count only with a drawn head whose answer is none of
    # those. The drawn heads of group "b" have different answers, none 0, none n_kv_heads - 1,
    # none the head itself, none the book's.
    h_a = _interleaved_head(rng, 12, 4, set())
    h_b1 = _interleaved_head(rng, 32, 8, set())
    h_b2 = _interleaved_head(rng, 32, 4, {h_b1 % 8})
    triples = [(0, 4, 4, "a", True), (7, 8, 1, "a", True), (h_a, 12, 4, "a", False),
               (h_b1, 32, 8, "b", False), (h_b2, 32, 4, "b", False)]
    for points, (h, n, g, group, predictable) in zip((0, 0, 4, 3, 2), triples, strict=True):
        like = [(kv_head_of(h, n, g), say("classroom.hint_consecutive_index"))]
        cases.append(Case(question=q, name=say("classroom.case_head_of", h=h, n=n, g=g),
                          points=points, function="kv_head", args=[h, n, g],
                          check=number(kv_head(h, n, g), say("classroom.what_head_index"),
                                       like=like),
                          group=group, predictable=predictable))

    def qkv(n_heads, n_kv, T, d):
        return (rng.normal(size=(n_heads, T, d)), rng.normal(size=(n_kv, T, d)),
                rng.normal(size=(n_kv, T, d)))

    q = "q2_gqa_attention"
    cases.append(Case(question=q, name=say("classroom.case_shape"), points=1, public=True,
                      function="gqa_attention",
                      args=[np.ones((4, 3, 2)), np.ones((2, 3, 2)), np.ones((2, 3, 2))],
                      check=shaped((4, 3, 2))))
    # one key/value head per query head (MHA) and one for all (MQA) read the same heads in
    # either convention: each counts only together with a grouped case, where the book's
    # consecutive groups give another answer
    for points, (h, g, T, causal, group) in zip((2, 2, 3, 2), ((4, 4, 5, False, "a"),
                                                               (4, 1, 6, False, "b"),
                                                               (8, 2, 7, True, "a"),
                                                               (6, 3, 4, True, "b")),
                                                strict=True):
        args = qkv(h, g, T, 4)
        name = say("classroom.case_gqa_causal" if causal else "classroom.case_gqa", h=h, g=g)
        cases.append(Case(question=q, name=name, points=points, function="gqa_attention",
                          args=[*args, causal], check=_gqa_check(args, causal), group=group))

    q = "q3_decode"
    cases.append(Case(question=q, name=say("classroom.case_shape"), points=1, public=True,
                      function="decode", args=list(qkv(4, 2, 5, 2)), check=shaped((4, 5, 2))))
    # one token: the values themselves are right; it counts only with the 6-token case
    shapes = ((2, 2, 1, "short"), (4, 2, 6, "short"), (8, 2, int(rng.integers(9, 16)), ""))
    for points, (h, g, T, group) in zip((0, 5, 4), shapes, strict=True):
        args = qkv(h, g, T, 4)
        cases.append(Case(question=q, name=say("classroom.case_gqa_decode", T=T, h=h, g=g),
                          points=points, function="decode", args=list(args),
                          check=_gqa_check(args, True), group=group,
                          predictable=T == 1))

    from book.ideas import gqa

    q = "q4_cache_bytes"
    cases.append(Case(question=q, name=say("classroom.case_one_number"), points=1, public=True,
                      function="cache_bytes", args=[1, 1, 1, 1, 1], check=number(2)))

    def drawn():
        return (int(rng.integers(2, 48)), int(rng.integers(64, 8192)),
                int(rng.choice([1, 2, 8])), int(rng.choice([64, 128])),
                int(rng.choice([1, 2, 4])))

    # a Llama-style shape (exactly 1 GiB) and no tokens (0 bytes) are guessable: each only
    # counts together with a drawn configuration
    configs = [(0, (32, 8192, 8, 128, 2), "a"), (4, drawn(), "a"), (5, drawn(), "b"),
               (0, (1, 0, 4, 64, 4), "b")]
    for points, args, group in configs:
        cases.append(Case(question=q, name=f"{args}", points=points, function="cache_bytes",
                          args=list(args), check=number(gqa.kv_cache_bytes(*args)), group=group,
                          predictable=points == 0))
    return cases


# ---- answers that must not (constant ones) and must (float32 ones) earn the marks ------------

def constants() -> dict[str, Answer]:
    def values_per_head(q, k, v, causal=False):
        return np.tile(v, (len(q) // len(v), 1, 1))

    kinds = {
        "zeros": {"gqa_attention": lambda q, k, v, causal=False: np.zeros_like(q),
                  "decode": lambda q, k, v: np.zeros_like(q)},
        "ones": {"gqa_attention": lambda q, k, v, causal=False: np.ones_like(q),
                 "decode": lambda q, k, v: np.ones_like(q)},
        "the input": {"kv_head": lambda query_head, n_heads, n_kv_heads: query_head,
                      "gqa_attention": lambda q, k, v, causal=False: q,
                      "decode": lambda q, k, v: q,
                      "cache_bytes": lambda n_layers, *rest: n_layers},
        "values only": {"kv_head": lambda query_head, n_heads, n_kv_heads: n_kv_heads - 1,
                        "gqa_attention": values_per_head, "decode": values_per_head},
    }
    return kinds | int_constants(("kv_head", "cache_bytes"), extra=(2**30,))


def float32() -> Answer:
    import torch
    import torch.nn.functional as F

    def gqa_attention(q, k, v, causal=False):
        group = len(q) // len(k)
        k, v = np.tile(k, (group, 1, 1)), np.tile(v, (group, 1, 1))
        q, k, v = (torch.as_tensor(np.asarray(a), dtype=torch.float32)[None] for a in (q, k, v))
        with torch.no_grad():
            out = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
        return out[0].numpy()

    def decode(q, k, v):
        outputs = []
        for t in range(np.shape(q)[1]):
            outputs.append(gqa_attention(np.asarray(q)[:, t:t + 1], np.asarray(k)[:, :t + 1],
                                         np.asarray(v)[:, :t + 1])[:, 0])
        return np.stack(outputs, axis=1)

    return {"gqa_attention": gqa_attention, "decode": decode}


ASSIGNMENT = Assignment(stem=STEM, name=NAME, build=hidden_cases, constants=constants,
                        float32=float32, partial_mistakes=PARTIAL_MISTAKES,
                        draws_on=DRAWS_ON,
                        written=Written(rubric=say("classroom.rubric_04")))
