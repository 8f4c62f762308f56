"""Are the hidden cases fair? What constant answers, the reference and a float32 reference score.

Each answer is a set of functions, as a student notebook would define them. They are called by
the grader's own kernel harness (:data:`~book.classroom.runner.KERNEL_HARNESS`, run here in
this process rather than in a sandbox: the answers are ours) on each assignment's cases, and
scored by :func:`~book.classroom.grading.score`, exactly as submissions are:

- **constant and shape-only answers** (:data:`CONSTANTS`): zeros, ones or an all-True mask,
  returning an input (or only the values), uniform weights, a fixed number. Each must score at
  most the public check's points of its question.
- **the reference**: the instructor notebook's own solution; it must score full marks.
- **a float32 reference** (:data:`FLOAT32`): a correct answer computed in float32 (e.g.
  ``torch.softmax`` on a float32 copy). Nothing in the assignments asks for float64, so it
  must score full marks too. Questions whose answers are integers or booleans have none.

``python -m book.classroom fairness`` prints the table (exit 1 where a row is unfair);
``tests/test_classroom_fairness.py`` asserts it, over several seeds of the hidden inputs.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from . import grading, runner, sandbox, specs
from .assign import SOURCES

# ---- constant and shape-only answers, per assignment stem ----------------------------------


def _np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _a1_constants() -> dict[str, dict[str, Callable]]:
    def shape(Q, K, V):
        return len(Q), np.shape(V)[1], len(K)

    def const_attention(fill):
        def attention(Q, K, V, mask=None):
            nq, dv, nk = shape(Q, K, V)
            return np.full((nq, dv), fill), np.full((nq, nk), fill)
        return attention

    def uniform_attention(Q, K, V, mask=None):  # ignores Q and K (and the mask)
        nq, dv, nk = shape(Q, K, V)
        return np.tile(np.mean(V, axis=0), (nq, 1)), np.full((nq, nk), 1 / nk)

    def input_attention(Q, K, V, mask=None):  # the values themselves, the mask as weights
        nq, dv, nk = shape(Q, K, V)
        w = np.asarray(mask, dtype=float) if mask is not None else np.eye(nq, nk)
        return np.resize(np.asarray(V, dtype=float), (nq, dv)), w

    return {
        "zeros": {"softmax": lambda x: np.zeros_like(np.asarray(x, dtype=float)),
                  "attention": const_attention(0.0),
                  "causal_mask": lambda n: np.zeros((n, n), dtype=bool)},
        "ones / all True": {"softmax": lambda x: np.ones_like(np.asarray(x, dtype=float)),
                            "attention": const_attention(1.0),
                            "causal_mask": lambda n: np.ones((n, n), dtype=bool)},
        "the input": {"softmax": lambda x: np.asarray(x, dtype=float),
                      "attention": input_attention,
                      "causal_mask": lambda n: np.eye(n, dtype=bool)},
        "uniform": {"softmax": lambda x: np.full(np.shape(x), 1 / np.shape(x)[-1]),
                    "attention": uniform_attention,
                    "causal_mask": lambda n: np.triu(np.ones((n, n), dtype=bool))},
    }


def _a2_constants() -> dict[str, dict[str, Callable]]:
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


def _int_constants(functions: tuple[str, ...], values=range(8), extra=()) -> dict:
    kinds = {}
    for c in [*values, *extra]:
        kinds[f"return {c}"] = {f: (lambda *a, c=c: c) for f in functions}
    return kinds


def _a3_constants() -> dict[str, dict[str, Callable]]:
    def cumulative_mean(X, W_q, W_k, W_v):
        values = np.asarray(X) @ W_v
        return np.cumsum(values, axis=0) / np.arange(1, len(values) + 1)[:, None]

    kinds = {
        "zeros": {"attend": lambda q, K, V: np.zeros(np.shape(V)[1]),
                  "decode": lambda X, W_q, W_k, W_v: np.zeros((len(X), np.shape(W_v)[1]))},
        "ones": {"attend": lambda q, K, V: np.ones(np.shape(V)[1]),
                 "decode": lambda X, W_q, W_k, W_v: np.ones((len(X), np.shape(W_v)[1]))},
        "the input": {"attend": lambda q, K, V: np.asarray(V)[-1],
                      "decode": lambda X, W_q, W_k, W_v: np.asarray(X) @ W_v,
                      "cache_bytes": lambda n_layers, *rest: n_layers},
        "uniform": {"attend": lambda q, K, V: np.mean(V, axis=0), "decode": cumulative_mean},
    }
    return kinds | _int_constants(("cache_bytes",), extra=(2**31,))


def _a4_constants() -> dict[str, dict[str, Callable]]:
    def values_per_head(q, k, v, causal=False):
        return np.repeat(v, len(q) // len(v), axis=0)

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
    return kinds | _int_constants(("kv_head", "cache_bytes"), extra=(2**30,))


def _a5_constants() -> dict[str, dict[str, Callable]]:
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


def _a6_constants() -> dict[str, dict[str, Callable]]:
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


def _a7_constants() -> dict[str, dict[str, Callable]]:
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


CONSTANTS: dict[str, Callable[[], dict[str, dict[str, Callable]]]] = {
    "01_attention_numpy": _a1_constants, "02_mha_torch": _a2_constants,
    "03_kv_cache": _a3_constants, "04_gqa": _a4_constants, "05_scaling": _a5_constants,
    "06_stability": _a6_constants, "07_masks": _a7_constants}


# ---- correct answers computed in float32 -----------------------------------------------------

def _a1_float32() -> dict[str, Callable]:
    import torch

    def softmax(x):  # the answer: torch.softmax on a float32 copy
        return torch.softmax(torch.as_tensor(np.asarray(x), dtype=torch.float32), -1).numpy()

    def attention(Q, K, V, mask=None):
        Q, K, V = (np.asarray(a, dtype=np.float32) for a in (Q, K, V))
        scores = Q @ K.T / np.sqrt(np.float32(Q.shape[-1]))
        if mask is not None:
            scores = np.where(mask, scores, np.float32(-np.inf))
        w = _np_softmax(scores)
        return w @ V, w

    return {"softmax": softmax, "attention": attention}


def _a2_float32() -> dict[str, Callable]:
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


def _a3_float32() -> dict[str, Callable]:
    def attend(q, K, V):
        q, K, V = (np.asarray(a, dtype=np.float32) for a in (q, K, V))
        return _np_softmax(K @ q / np.sqrt(np.float32(len(q)))) @ V

    def decode(X, W_q, W_k, W_v):
        X, W_q, W_k, W_v = (np.asarray(a, dtype=np.float32) for a in (X, W_q, W_k, W_v))
        keys, values, out = [], [], []
        for x in X:
            keys.append(x @ W_k)
            values.append(x @ W_v)
            out.append(attend(x @ W_q, np.array(keys), np.array(values)))
        return np.array(out)

    return {"attend": attend, "decode": decode}


def _a4_float32() -> dict[str, Callable]:
    import torch
    import torch.nn.functional as F

    def gqa_attention(q, k, v, causal=False):
        q, k, v = (torch.as_tensor(np.asarray(a), dtype=torch.float32)[None] for a in (q, k, v))
        with torch.no_grad():
            out = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal),
                                                 enable_gqa=True)
        return out[0].numpy()

    def decode(q, k, v):
        outputs = []
        for t in range(np.shape(q)[1]):
            outputs.append(gqa_attention(np.asarray(q)[:, t:t + 1], np.asarray(k)[:, :t + 1],
                                         np.asarray(v)[:, :t + 1])[:, 0])
        return np.stack(outputs, axis=1)

    return {"gqa_attention": gqa_attention, "decode": decode}


def _a5_float32() -> dict[str, Callable]:
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


def _a6_float32() -> dict[str, Callable]:
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


def _a7_float32() -> dict[str, Callable]:
    import torch

    def masked_attention(Q, K, V, additive):
        q, k, v, a = (torch.as_tensor(np.asarray(x), dtype=torch.float32)
                      for x in (Q, K, V, additive))
        scores = q @ k.transpose(-2, -1) / np.sqrt(np.float32(q.shape[-1])) + a
        w = torch.nan_to_num(torch.softmax(scores, -1), nan=0.0)  # all -inf rows: 0
        return (w @ v).numpy(), w.numpy()

    return {"masked_attention": masked_attention}


FLOAT32: dict[str, Callable[[], dict[str, Callable]]] = {
    "01_attention_numpy": _a1_float32, "02_mha_torch": _a2_float32,
    "03_kv_cache": _a3_float32, "04_gqa": _a4_float32, "05_scaling": _a5_float32,
    "06_stability": _a6_float32, "07_masks": _a7_float32}


def reference(stem: str, source_dir: Path = SOURCES) -> dict[str, object]:
    """The instructor notebook's solution: its code cells run in a fresh namespace."""
    import nbformat

    namespace: dict[str, object] = {}
    nb = nbformat.read(Path(source_dir) / f"{stem}.ipynb", as_version=4)
    with contextlib.redirect_stdout(io.StringIO()):  # what its "see it" cells print
        for cell in nb.cells:
            if cell.cell_type == "code":
                exec(compile(cell.source, f"{stem}.ipynb", "exec"), namespace)  # noqa: S102
    return namespace


# ---- scoring an answer like a submission -------------------------------------------------------

def run_answer(assignment: specs.Assignment, functions: dict, seed: int,
               case_seconds: float = 5.0, language: str = "en") -> list[dict]:
    """The grader's rows for a notebook that defines ``functions``: the kernel harness calls
    them on this seed's cases (here, not in a sandbox) and :func:`grading.score` scores it,
    worded in ``language``."""
    cases = assignment.cases(seed)
    wire = [c.wire(i, case_seconds) for i, c in enumerate(cases)]
    namespace = dict(functions)
    exec(runner.KERNEL_HARNESS, namespace)  # noqa: S102 - the grader's own harness
    with tempfile.TemporaryDirectory(prefix="fairness-") as tmp:
        cases_path, results_path = os.path.join(tmp, "cases.json"), os.path.join(tmp, "out")
        Path(cases_path).write_text(json.dumps(wire), encoding="utf-8")
        with contextlib.redirect_stdout(io.StringIO()), np.errstate(all="ignore"):
            namespace["__grading_harness"](cases_path, results_path)
        results = json.loads(Path(results_path).read_text(encoding="utf-8"))
    outcome = sandbox.Outcome({"status": "ok", "detail": "", "results": results}, "", 0.0,
                              "in-process")
    return grading.score(assignment, cases, outcome, language)


def scores(assignment: specs.Assignment, functions: dict, seed: int) -> dict[str, float]:
    return {r["question"]: float(r["score"]) for r in run_answer(assignment, functions, seed)}


def table(seeds=range(5)) -> list[dict]:
    """One row per question: points, the public share, the best constant answer's score (the
    most over ``seeds`` and every constant kind, and which), the reference's and the float32
    reference's scores (the least over ``seeds``; None where the answer is not a float)."""
    rows = []
    for assignment in specs.ASSIGNMENTS.values():
        stem = assignment.stem
        constants = CONSTANTS[stem]()
        solution, single = reference(stem), FLOAT32[stem]()
        cases = assignment.cases(0)
        questions = assignment.questions()
        best = {q: (-1.0, "") for q in questions}
        ref = dict.fromkeys(questions, np.inf)
        f32 = dict.fromkeys(questions, np.inf)
        for seed in seeds:
            for kind, functions in constants.items():
                for q, got in scores(assignment, functions, seed).items():
                    if got > best[q][0]:
                        best[q] = (got, kind)
            for q, got in scores(assignment, solution, seed).items():
                ref[q] = min(ref[q], got)
            for q, got in scores(assignment, {**solution, **single}, seed).items():
                f32[q] = min(f32[q], got)
        for q, possible in questions.items():
            functions = {c.function for c in cases if c.question == q}
            public = sum(c.points for c in cases if c.question == q and c.public)
            rows.append({"assignment": stem, "question": q, "possible": possible,
                         "public": public, "constant": best[q][0], "constant_kind": best[q][1],
                         "reference": ref[q],
                         "float32": f32[q] if functions & set(single) else None})
    return rows


def format_table(rows: list[dict]) -> str:
    head = (f"{'assignment':20} {'question':17} {'points':>6} {'public':>6} "
            f"{'constant (best of all)':>30} {'reference':>9} {'float32':>7}")
    lines = [head, "-" * len(head)]
    for r in rows:
        constant = f"{r['constant']:g} ({r['constant_kind']})"
        f32 = "n/a" if r["float32"] is None else f"{r['float32']:g}"
        lines.append(f"{r['assignment']:20} {r['question']:17} {r['possible']:>6g} "
                     f"{r['public']:>6g} {constant:>30} {r['reference']:>9g} {f32:>7}")
    return "\n".join(lines)


def fair(rows: list[dict]) -> bool:
    """Every constant answer at most the public share, the references at full marks."""
    return all(r["constant"] <= r["public"] and r["reference"] == r["possible"]
               and r["float32"] in (None, r["possible"]) for r in rows)
