"""Assignment 6, a stuck run, Pre-norm and Post-norm blocks (``assignments/06_stability.ipynb``):
its hidden cases, the answers that check they are fair, and the demo's partly wrong solution."""

from __future__ import annotations

import numpy as np

from ..cases import Answer, Assignment, Case, Written
from ..compare import close_to, equal_to, shaped
from ..feedback import Text as say

# The instructor notebook (assignments/<STEM>.ipynb) and otter's name for the assignment,
# stored in the student notebooks' metadata.
STEM, NAME = "06_stability", "attention-06-stability"
# The chapter pages (book.chapters.CHAPTERS) it draws on: the teacher's plan hands it out
# only once they are taught (tests/site/test_plan_order.py).
DRAWS_ON = ("05_stability",)
# The demo's partly wrong solution: (a line of the solution, its wrong version) pairs, each
# found exactly once in the solution.
PARTIAL_MISTAKES = (
    ("loss = (h - target).pow(2).mean()",
     "loss = (h - target).pow(2).sum()"),  # a sum, not the mean the question asks for
)


# ---- the hidden cases ------------------------------------------------------------------------

def _rms_norm(x, gain, eps=1e-6):
    return x / (x.pow(2).mean(dim=-1, keepdim=True) + eps).sqrt() * gain


def _block(x, W1, W2, gain, pre_norm: bool):
    import torch

    if pre_norm:
        return x + torch.relu(_rms_norm(x, gain) @ W1) @ W2
    return _rms_norm(x + torch.relu(x @ W1) @ W2, gain)


def _gradient_norms(x, target, W1, W2, gain, pre_norm: bool) -> np.ndarray:
    import torch

    W1 = torch.from_numpy(W1).requires_grad_(True)
    h = torch.from_numpy(x)
    for layer in range(len(W1)):
        h = _block(h, W1[layer], torch.from_numpy(W2[layer]), torch.from_numpy(gain[layer]),
                   pre_norm)
    (h - torch.from_numpy(target)).pow(2).mean().backward()
    return W1.grad.flatten(1).norm(dim=1).numpy()


def _stuck_run(rng: np.random.Generator, n_steps: int, n_layers: int) -> np.ndarray:
    """Per-layer gradient norms of a run whose lower layers stop learning: layer l decays
    geometrically from its own start, lower layers faster; the top layers never collapse."""
    start = rng.uniform(0.5, 2.0, size=n_layers)
    rates = np.sort(rng.uniform(0.0, 0.25, size=n_layers))[::-1]
    rates[-2:] = 0.0
    steps = np.arange(n_steps)[:, None]
    noise = np.exp(rng.normal(scale=0.1, size=(n_steps, n_layers)))
    noise[0] = 1.0
    return start * np.exp(-rates * steps) * noise


def _collapse_steps(grad_norms: np.ndarray, fraction: float) -> np.ndarray:
    out = []
    for column in grad_norms.T:
        below = np.nonzero(column < fraction * column[0])[0]
        out.append(int(below[0]) if len(below) else -1)
    return np.array(out)


def hidden_cases(rng: np.random.Generator) -> list[Case]:
    import torch

    cases = []
    q = "q1_collapse"
    cases.append(Case(question=q, name=say("classroom.case_shape"), points=1, public=True,
                      function="collapse_steps", args=[np.ones((5, 3)), 0.5], check=shaped((3,)),
                      tensor_args=True))
    for points, (n_steps, n_layers, fraction) in zip(
            (3, 3, 3), ((30, 4, 0.1), (int(rng.integers(40, 80)), 6, 0.05), (50, 8, 0.3)),
            strict=True):
        norms = _stuck_run(rng, n_steps, n_layers)
        name = say("classroom.case_collapse", n_steps=n_steps, n_layers=n_layers,
                   fraction=fraction)
        cases.append(Case(question=q, name=name, points=points, function="collapse_steps",
                          args=[norms, fraction],
                          check=equal_to(_collapse_steps(norms, fraction),
                                         say("classroom.what_steps")),
                          tensor_args=True))

    def weights(d, h, layers=None, std=None):
        lead = () if layers is None else (layers,)
        std = (2 / (d + h)) ** 0.5 if std is None else std
        return (rng.normal(scale=std, size=(*lead, d, h)),
                rng.normal(scale=std, size=(*lead, h, d)), rng.uniform(0.5, 1.5, size=(*lead, d)))

    q = "q2_blocks"
    cases.append(Case(question=q, name=say("classroom.case_shapes"), points=1, public=True,
                      function="pre_norm_block",
                      args=[np.ones((2, 3, 4)), np.ones((4, 6)), np.ones((6, 4)), np.ones(4)],
                      check=shaped((2, 3, 4)), tensor_args=True))
    x = rng.normal(loc=0.5, scale=2.0, size=(3, 5, 8))
    gain = rng.uniform(0.5, 1.5, size=8)
    expected = _rms_norm(torch.from_numpy(x), torch.from_numpy(gain)).numpy()
    cases.append(Case(question=q, name="rms_norm", points=3, function="rms_norm", args=[x, gain],
                      check=close_to(expected), tensor_args=True))
    for points, pre in ((3, True), (3, False)):
        x = rng.normal(loc=0.3, size=(4, 6, 8))
        W1, W2, gain = weights(8, 12)
        expected = _block(*(torch.from_numpy(a) for a in (x, W1, W2, gain)), pre).numpy()
        name = say("classroom.case_pre_norm" if pre else "classroom.case_post_norm")
        cases.append(Case(question=q, name=name, points=points,
                          function="pre_norm_block" if pre else "post_norm_block",
                          args=[x, W1, W2, gain], check=close_to(expected), tensor_args=True))

    q = "q3_gradients"
    cases.append(Case(question=q, name=say("classroom.case_shape"), points=1, public=True,
                      function="layer_gradient_norms",
                      args=[np.ones((5, 4)), np.zeros((5, 4)), np.ones((3, 4, 6)) / 10,
                            np.ones((3, 6, 4)) / 10, np.ones((3, 4)), True],
                      check=shaped((3,)), tensor_args=True))
    for points, (layers, pre, std) in zip((3, 3, 3), ((4, True, None), (4, False, None),
                                                      (int(rng.integers(6, 10)), False, 1.0)),
                                          strict=True):
        x, target = rng.normal(size=(16, 8)), rng.normal(size=(16, 8))
        W1, W2, gain = weights(8, 12, layers, std)
        expected = _gradient_norms(x, target, W1, W2, gain, pre)
        name = say(f"classroom.case_{'pre' if pre else 'post'}_layers"
                   + ("_large" if std else ""), layers=layers)
        cases.append(Case(question=q, name=name, points=points, function="layer_gradient_norms",
                          args=[x, target, W1, W2, gain, pre],
                          check=close_to(expected, what=say("classroom.what_gradient_norms")),
                          tensor_args=True))
    return cases


# ---- answers that must not (constant ones) and must (float32 ones) earn the marks ------------

def constants() -> dict[str, Answer]:
    import torch

    def n_layers(grad_norms):
        return torch.as_tensor(grad_norms).shape[1]

    return {
        "zeros": {"collapse_steps": lambda g, f: torch.zeros(n_layers(g), dtype=torch.long),
                  "rms_norm": lambda x, gain, eps=1e-6: torch.zeros_like(x),
                  "pre_norm_block": lambda x, *w: torch.zeros_like(x),
                  "post_norm_block": lambda x, *w: torch.zeros_like(x),
                  "layer_gradient_norms": lambda x, t, W1, *r: torch.zeros(len(W1))},
        "ones": {"collapse_steps": lambda g, f: torch.ones(n_layers(g), dtype=torch.long),
                 "rms_norm": lambda x, gain, eps=1e-6: torch.ones_like(x),
                 "pre_norm_block": lambda x, *w: torch.ones_like(x),
                 "post_norm_block": lambda x, *w: torch.ones_like(x),
                 "layer_gradient_norms": lambda x, t, W1, *r: torch.ones(len(W1))},
        "the input / never": {
            "collapse_steps": lambda g, f: torch.full((n_layers(g),), -1),
            "rms_norm": lambda x, gain, eps=1e-6: x,
            "pre_norm_block": lambda x, *w: x, "post_norm_block": lambda x, *w: x,
            "layer_gradient_norms": lambda x, t, W1, *r: W1.flatten(1).norm(dim=1)},
        "last step": {"collapse_steps": lambda g, f: torch.full((n_layers(g),),
                                                                 len(g) - 1)},
    }


def float32() -> Answer:
    import torch

    def rms_norm(x, gain, eps=1e-6):
        x, gain = x.float(), gain.float()
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * gain

    def pre_norm_block(x, W1, W2, gain):
        x = x.float()
        return x + torch.relu(rms_norm(x, gain) @ W1.float()) @ W2.float()

    def post_norm_block(x, W1, W2, gain):
        x = x.float()
        return rms_norm(x + torch.relu(x @ W1.float()) @ W2.float(), gain)

    def layer_gradient_norms(x, target, W1, W2, gain, pre_norm):
        W1 = W1.detach().float().requires_grad_(True)
        block = pre_norm_block if pre_norm else post_norm_block
        h = x.float()
        for layer in range(len(W1)):
            h = block(h, W1[layer], W2[layer], gain[layer])
        (h - target.float()).pow(2).mean().backward()
        return W1.grad.flatten(1).norm(dim=1)

    return {"rms_norm": rms_norm, "pre_norm_block": pre_norm_block,
            "post_norm_block": post_norm_block, "layer_gradient_norms": layer_gradient_norms}


ASSIGNMENT = Assignment(stem=STEM, name=NAME, build=hidden_cases, constants=constants,
                        float32=float32, partial_mistakes=PARTIAL_MISTAKES,
                        draws_on=DRAWS_ON,
                        written=Written(rubric=say("classroom.rubric_06")))
