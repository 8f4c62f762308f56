"""Assignment 7, masks in two conventions (``assignments/07_masks.ipynb``): its hidden cases, the
answers that check they are fair, and the demo's partly wrong solution."""

from __future__ import annotations

import numpy as np

from ..cases import Answer, Assignment, Case, Written
from ..compare import Wrong, as_array, checker, close_to, equal_to, pair, shaped
from ..feedback import Text as say

# The instructor notebook (assignments/<STEM>.ipynb) and otter's name for the assignment,
# stored in the student notebooks' metadata.
STEM, NAME = "07_masks", "attention-07-masks"
# The chapter pages (book.chapters.CHAPTERS) it draws on: the teacher's plan hands it out
# only once they are taught (tests/site/test_plan_order.py).
DRAWS_ON = ("04_pytorch", "07_mask_traps")
# The demo's partly wrong solution: (a line of the solution, its wrong version) pairs, each
# found exactly once in the solution.
PARTIAL_MISTAKES = (
    ("position = np.arange(n_q)[:, None] + (n_k - n_q)",
     "position = np.arange(n_q)[:, None]"),  # causal mask aligned top-left
)


# ---- the hidden cases ------------------------------------------------------------------------

MASK = say("classroom.what_mask")


def _additive(allowed: np.ndarray):
    """An additive mask must be 0.0 exactly where allowed and -inf exactly where blocked."""
    allowed = np.asarray(allowed, dtype=bool)

    def body(output):
        arr = as_array(output, allowed.shape, MASK).astype(float)
        if not np.all((arr == 0) | np.isneginf(arr)):
            raise Wrong(say("classroom.mask_values"))
        if not np.array_equal(arr == 0, allowed):
            raise Wrong(say("classroom.mask_entries"))
    return checker(body)


def _masked_reference(Q, K, V, allowed) -> tuple[np.ndarray, np.ndarray]:
    """Per sequence and query: the book's attention on the allowed keys, zeros for a row that
    allows none (the book's own function refuses such a row, rightly)."""
    from book.ideas.attention import scaled_dot_product_attention

    out = np.zeros((*Q.shape[:2], V.shape[-1]))
    weights = np.zeros(allowed.shape)
    for b in range(len(Q)):
        for i in range(Q.shape[1]):
            if allowed[b, i].any():
                o, w = scaled_dot_product_attention(Q[b, i:i + 1], K[b], V[b],
                                                    allowed[b, i:i + 1])
                out[b, i], weights[b, i] = o[0], w[0]
    return out, weights


def hidden_cases(rng: np.random.Generator) -> list[Case]:
    from book.ideas.masks import padding_mask

    def blocked(lengths, n_q, n_k):
        keys = ~padding_mask(lengths, n_k, side="left").numpy()      # book: True = real
        return np.repeat(keys[:, None, :], n_q, axis=1)

    def causal_allowed(n_q, n_k):
        return np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q)

    cases = []
    q = "q1_padding"
    cases.append(Case(question=q, name=say("classroom.case_shape"), points=1, public=True,
                      function="key_padding_blocked", args=[np.array([2, 3]), 4, 3],
                      check=shaped((2, 4, 3), bool)))
    for points, (batch, n_q, n_k) in zip((3, 3, 3), ((3, 2, 6), (4, 5, 3),
                                                     (int(rng.integers(5, 9)), 1, 10)),
                                         strict=True):
        lengths = rng.integers(1, n_k, size=batch)
        lengths[0] = n_k                             # one sequence without padding
        cases.append(Case(question=q,
                          name=say("classroom.case_padding", batch=batch, n_q=n_q, n_k=n_k),
                          points=points, function="key_padding_blocked", args=[lengths, n_q, n_k],
                          check=equal_to(blocked(lengths, n_q, n_k), MASK)))

    q = "q2_causal"
    cases.append(Case(question=q, name=say("classroom.case_values"), points=1, public=True,
                      function="causal_additive", args=[2, 3], check=shaped((2, 3))))
    # one query at the end sees every key: all zeros, guessable; it counts only together
    # with a drawn chunk
    n_k = int(rng.integers(6, 12))
    for points, (n_q, n_k_, group) in zip((0, 4, 5), ((1, 5, "a"), (3, n_k, "a"),
                                                     (int(rng.integers(2, 6)), 14, "")),
                                          strict=True):
        cases.append(Case(question=q, name=say("classroom.case_queries_keys", n_q=n_q, n_k=n_k_),
                          points=points, function="causal_additive", args=[n_q, n_k_],
                          check=_additive(causal_allowed(n_q, n_k_)), group=group,
                          predictable=n_q == 1))
    cases.append(Case(question=q, name=say("classroom.case_square"), points=0,
                      function="causal_additive", args=[6, 6],
                      check=_additive(causal_allowed(6, 6)), group="a", predictable=True))

    q = "q3_combine"
    cases.append(Case(question=q, name=say("classroom.case_shape"), points=1, public=True,
                      function="combine_masks",
                      args=[np.zeros((2, 3)), np.zeros((4, 2, 3), dtype=bool)],
                      check=shaped((4, 2, 3))))
    for points, (batch, n_q, n_k) in zip((4, 5), ((2, 3, 5), (3, 4, 7)), strict=True):
        additive = np.where(causal_allowed(n_q, n_k), 0.0, -np.inf)
        block = rng.random(size=(batch, n_q, n_k)) < 0.4
        allowed = causal_allowed(n_q, n_k)[None] & ~block
        cases.append(Case(question=q,
                          name=say("classroom.case_combine", batch=batch, n_q=n_q, n_k=n_k),
                          points=points, function="combine_masks", args=[additive, block],
                          check=_additive(allowed)))

    q = "q4_attention"
    cases.append(Case(question=q, name=say("classroom.case_shapes"), points=1, public=True,
                      function="masked_attention",
                      args=[np.ones((2, 3, 4)), np.ones((2, 5, 4)), np.ones((2, 5, 6)),
                            np.zeros((2, 3, 5))],
                      check=pair(shaped((2, 3, 6)), shaped((2, 3, 5)))))
    for points, (batch, n_q, n_k, empty) in zip((4, 5), ((2, 3, 6, False), (3, 4, 7, True)),
                                                strict=True):
        lengths = rng.integers(n_q + 1, n_k + 1, size=batch)
        if empty:   # short sequences: their first queries sit on padding and see no key
            lengths[1:] = rng.integers(1, n_q, size=batch - 1)
        allowed = causal_allowed(n_q, n_k)[None] & ~blocked(lengths, n_q, n_k)
        Q, K = rng.normal(size=(batch, n_q, 4)), rng.normal(size=(batch, n_k, 4))
        V = rng.normal(size=(batch, n_k, 3))
        out, w = _masked_reference(Q, K, V, allowed)
        name = say("classroom.case_sequences_empty" if empty else "classroom.case_sequences",
                   batch=batch)
        cases.append(Case(question=q, name=name, points=points, function="masked_attention",
                          args=[Q, K, V, np.where(allowed, 0.0, -np.inf)],
                          check=pair(close_to(out),
                                     close_to(w, what=say("classroom.what_weights")))))
    return cases


# ---- answers that must not (constant ones) and must (float32 ones) earn the marks ------------

def constants() -> dict[str, Answer]:
    def attention_shape(Q, V):
        return (*np.shape(Q)[:2], np.shape(V)[-1])

    def uniform_attention(Q, K, V, additive):  # ignores the scores, keeps the mask
        allowed = np.isfinite(additive)
        w = allowed / np.maximum(allowed.sum(axis=-1, keepdims=True), 1)
        return w @ V, w

    def kinds_for(fill, mask_fill):
        return {"key_padding_blocked": lambda lengths, n_q, n_k: np.full(
                    (len(lengths), n_q, n_k), mask_fill, dtype=bool),
                "causal_additive": lambda n_q, n_k: np.full((n_q, n_k), fill),
                "combine_masks": lambda a, b: np.full(np.shape(b), fill),
                "masked_attention": lambda Q, K, V, a: (
                    np.full(attention_shape(Q, V), fill), np.full(np.shape(a), fill))}

    return {
        "zeros / nothing blocked": kinds_for(0.0, False),
        "-inf / all blocked": kinds_for(-np.inf, True),
        "the input": {"combine_masks": lambda a, b: np.broadcast_to(a, np.shape(b)),
                      "causal_additive": lambda n_q, n_k: np.where(
                          np.tril(np.ones((n_q, n_k), dtype=bool)), 0.0, -np.inf),
                      "masked_attention": lambda Q, K, V, a: (
                          np.resize(V, attention_shape(Q, V)), np.asarray(a))},
        "uniform": {"masked_attention": uniform_attention},
    }


def float32() -> Answer:
    import torch

    def masked_attention(Q, K, V, additive):
        q, k, v, a = (torch.as_tensor(np.asarray(x), dtype=torch.float32)
                      for x in (Q, K, V, additive))
        scores = q @ k.transpose(-2, -1) / np.sqrt(np.float32(q.shape[-1])) + a
        w = torch.nan_to_num(torch.softmax(scores, -1), nan=0.0)  # all -inf rows: 0
        return (w @ v).numpy(), w.numpy()

    return {"masked_attention": masked_attention}


ASSIGNMENT = Assignment(stem=STEM, name=NAME, build=hidden_cases, constants=constants,
                        float32=float32, partial_mistakes=PARTIAL_MISTAKES,
                        draws_on=DRAWS_ON,
                        written=Written(rubric=say("classroom.rubric_07")))
