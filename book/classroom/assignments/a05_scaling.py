"""Assignment 5, why the scores are divided by √d_k (``assignments/05_scaling.ipynb``): its hidden
cases, the answers that check they are fair, and the demo's partly wrong solution."""

from __future__ import annotations

import numpy as np

from ..cases import Answer, Assignment, Case, Written
from ..compare import close_to, pair, scalar, shaped
from ..feedback import Text as say

# The instructor notebook (assignments/<STEM>.ipynb) and otter's name for the assignment,
# stored in the student notebooks' metadata.
STEM, NAME = "05_scaling", "attention-05-scaling"
# The chapter pages (book.chapters.CHAPTERS) it draws on: the teacher's plan hands it out
# only once they are taught (tests/site/test_plan_order.py).
DRAWS_ON = ("02_scaling",)
# The demo's partly wrong solution: (a line of the solution, its wrong version) pairs, each
# found exactly once in the solution.
PARTIAL_MISTAKES = (
    ("logs = np.log2(np.where(p > 0, p, 1.0))",
     "logs = np.log(np.where(p > 0, p, 1.0))"),  # entropy in nats, as the book has it
)


# ---- the hidden cases ------------------------------------------------------------------------

def hidden_cases(rng: np.random.Generator) -> list[Case]:
    import torch

    from book.ideas.attention import entropy, softmax

    cases = []
    q = "q1_variance"
    cases.append(Case(question=q, name=say("classroom.case_numbers"), points=1, public=True,
                      function="dot_variance", args=[np.ones((3, 4)), np.ones((3, 4))],
                      check=scalar()))
    # entries of standard deviation ≠ 1: an answer that returns d_k (the unit-variance rule)
    # is wrong; the variance divides by n (numpy's default), as the question says
    for points, n in zip((3, 2), (40, int(rng.integers(60, 120))), strict=True):
        d_k, sq, sk = int(rng.integers(8, 64)), rng.uniform(0.3, 0.8), rng.uniform(1.3, 2.5)
        Q, K = rng.normal(scale=sq, size=(n, d_k)), rng.normal(scale=sk, size=(n, d_k))
        cases.append(Case(question=q, name=say("classroom.case_pairs", n=n, d_k=d_k),
                          points=points, function="dot_variance", args=[Q, K],
                          check=close_to(np.sum(Q * K, axis=-1).var(),
                                         what=say("classroom.what_variance"))))
    for points in (2, 2):
        d_k, sq, sk = int(rng.integers(2, 512)), rng.uniform(0.2, 0.9), rng.uniform(1.1, 3.0)
        cases.append(Case(question=q, name=say("classroom.case_predicted", d_k=d_k),
                          points=points, function="predicted_variance",
                          args=[d_k, float(sq), float(sk)],
                          check=close_to(d_k * sq**2 * sk**2,
                                         what=say("classroom.what_variance"))))

    q = "q2_scores"
    cases.append(Case(question=q, name=say("classroom.case_shape"), points=1, public=True,
                      function="scaled_scores", args=[np.ones((2, 3, 4)), np.ones((2, 4, 5))],
                      check=shaped((2, 3, 5))))
    # d_k differs from n_k, so dividing by the wrong axis's size is wrong
    for points, (h, n_q, d_k, n_k) in zip((4, 5), ((2, 3, 16, 5), (4, 6, 8, 11)), strict=True):
        q_, k = rng.normal(size=(h, n_q, d_k)), rng.normal(size=(h, n_k, d_k))
        expected = (torch.from_numpy(q_) @ torch.from_numpy(k).transpose(-2, -1)
                    / np.sqrt(d_k)).numpy()
        cases.append(Case(question=q, name=say("classroom.case_scores", h=h, d_k=d_k, n_k=n_k),
                          points=points, function="scaled_scores",
                          args=[q_, np.ascontiguousarray(k.transpose(0, 2, 1))],
                          check=close_to(expected)))

    q = "q3_saturation"
    cases.append(Case(question=q, name=say("classroom.case_shapes"), points=1, public=True,
                      function="saturation", args=[np.zeros((2, 3, 4))],
                      check=pair(shaped((2, 3)), shaped((2, 3)))))
    moderate = rng.normal(scale=2.0, size=(3, 5, 8))
    # large scores (exp overflows without subtracting the row's maximum) and masked keys
    offset = rng.uniform(700, 1000, size=(6, 1))
    large = rng.normal(scale=3.0, size=(6, 9)) + offset
    large[rng.random(size=large.shape) < 0.3] = -np.inf
    large[:, int(rng.integers(9))] = offset[:, 0]           # never a whole row masked
    for points, scores, name in ((4, moderate, say("classroom.case_3d_scores")),
                                 (5, large, say("classroom.case_large_masked"))):
        p = softmax(scores)
        cases.append(Case(question=q, name=name, points=points, function="saturation",
                          args=[scores],
                          check=pair(close_to(p.max(axis=-1),
                                              what=say("classroom.what_largest")),
                                     close_to(entropy(p) / np.log(2),
                                              what=say("classroom.what_entropies")))))

    q = "q4_backward"
    cases.append(Case(question=q, name=say("classroom.case_shape"), points=1, public=True,
                      function="softmax_backward", args=[np.zeros((3, 4)), np.ones((3, 4))],
                      check=shaped((3, 4))))
    for points, shape in zip((4, 5), ((5, 7), (2, 4, 6)), strict=True):
        z, g = rng.normal(scale=1.5, size=shape), rng.normal(size=shape)
        zt = torch.from_numpy(z).requires_grad_(True)
        torch.softmax(zt, -1).backward(torch.from_numpy(g))   # autograd, here
        cases.append(Case(question=q, name=say("classroom.case_shape_of", shape=shape),
                          points=points, function="softmax_backward", args=[z, g],
                          check=close_to(zt.grad.numpy())))
    return cases


# ---- answers that must not (constant ones) and must (float32 ones) earn the marks ------------

def constants() -> dict[str, Answer]:
    def rows(scores):
        return np.shape(scores)[:-1]

    def scores_shape(q, k_t):
        return (*np.shape(q)[:-1], np.shape(k_t)[-1])

    def unit_rule(d_k, std_q, std_k):  # the book's unit-variance answer
        return d_k

    kinds = {
        "zeros": {"dot_variance": lambda Q, K: 0.0, "predicted_variance": lambda *a: 0.0,
                  "scaled_scores": lambda q, k_t: np.zeros(scores_shape(q, k_t)),
                  "saturation": lambda s: (np.zeros(rows(s)), np.zeros(rows(s))),
                  "softmax_backward": lambda z, g: np.zeros(np.shape(z))},
        "ones": {"dot_variance": lambda Q, K: 1.0, "predicted_variance": lambda *a: 1.0,
                 "scaled_scores": lambda q, k_t: np.ones(scores_shape(q, k_t)),
                 "saturation": lambda s: (np.ones(rows(s)), np.ones(rows(s))),
                 "softmax_backward": lambda z, g: np.ones(np.shape(z))},
        "the input": {"dot_variance": lambda Q, K: float(np.shape(Q)[-1]),
                      "predicted_variance": unit_rule,
                      "scaled_scores": lambda q, k_t: np.asarray(q) @ np.asarray(k_t),
                      "saturation": lambda s: (np.ones(rows(s)), np.zeros(rows(s))),
                      "softmax_backward": lambda z, g: np.asarray(g, dtype=float)},
        "uniform": {"saturation": lambda s: (np.full(rows(s), 1 / np.shape(s)[-1]),
                                             np.full(rows(s), np.log2(np.shape(s)[-1])))},
    }
    return kinds


def float32() -> Answer:
    import torch

    def f32(a):
        return torch.as_tensor(np.asarray(a), dtype=torch.float32)

    def dot_variance(Q, K):
        return float((f32(Q) * f32(K)).sum(-1).var(correction=0))

    def scaled_scores(q, k_t):
        return (f32(q) @ f32(k_t) / np.sqrt(np.float32(np.shape(q)[-1]))).numpy()

    def saturation(scores):
        p = torch.softmax(f32(scores), -1)
        logs = torch.log2(torch.where(p > 0, p, torch.ones_like(p)))
        return p.max(-1).values.numpy(), -(p * logs).sum(-1).numpy()

    def softmax_backward(scores, grad_weights):
        z = f32(scores).requires_grad_(True)
        torch.softmax(z, -1).backward(f32(grad_weights))
        return z.grad.numpy()

    return {"dot_variance": dot_variance, "scaled_scores": scaled_scores,
            "saturation": saturation, "softmax_backward": softmax_backward}


ASSIGNMENT = Assignment(stem=STEM, name=NAME, build=hidden_cases, constants=constants,
                        float32=float32, partial_mistakes=PARTIAL_MISTAKES,
                        draws_on=DRAWS_ON,
                        written=Written(rubric=say("classroom.rubric_05")))
