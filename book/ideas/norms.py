"""Chapter 3's normalisation experiment: LayerNorm vs BatchNorm on a padded batch.

Sentences of different lengths are padded to a common length. LayerNorm normalises each
token over its own d_model features, so padding and batch mates cannot touch it. BatchNorm
normalises each feature over every (sentence, position) of the batch — padding included —
so a token's output moves when the batch changes. Normalising over the *sequence* axis (a
common slip) makes a token's output depend on the other words of its sentence.
"""

from __future__ import annotations

import numpy as np

from book.kit import validate

EPS = 1e-5


def layer_norm(x, eps: float = EPS) -> np.ndarray:
    """Normalise each token (last axis = d_model) to mean 0 and variance 1; no affine part."""
    x = validate.array("x", x, ndim=(2, 3))
    eps = validate.real("eps", eps, low=0.0)
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    validate.normalisable(var, eps, what="token")  # eps=0 on a constant one: 0/0
    return (x - mean) / np.sqrt(var + eps)


def batch_norm(x, eps: float = EPS) -> np.ndarray:
    """BatchNorm's training-mode statistics for a (batch, seq, d_model) array: each feature over
    every sentence and position at once (what ``nn.BatchNorm1d`` does on padded batches)."""
    x = validate.array("x", x, ndim=3)
    eps = validate.real("eps", eps, low=0.0)
    mean = x.mean(axis=(0, 1), keepdims=True)
    var = x.var(axis=(0, 1), keepdims=True)
    validate.normalisable(var, eps, what="feature")  # eps=0 on a constant one: 0/0
    return (x - mean) / np.sqrt(var + eps)


def sequence_axis_norm(x, eps: float = EPS) -> np.ndarray:
    """The common mistake: normalising over the tokens of a sentence (axis 1), not d_model."""
    x = validate.array("x", x, ndim=3)
    eps = validate.real("eps", eps, low=0.0)
    mean = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    validate.normalisable(var, eps, what="sentence and feature")  # eps=0 on a constant one: 0/0
    return (x - mean) / np.sqrt(var + eps)


def padded_batch(sentences: list[np.ndarray], length: int | None = None) -> np.ndarray:
    """Stack (n_i, d_model) sentences into (batch, length, d_model), zero-padded on the right."""
    if not isinstance(sentences, (list, tuple)) or not sentences:
        raise TypeError("sentences must be a non-empty list of (n_tokens, d_model) arrays")
    arrays = [validate.array(f"sentences[{i}]", s, ndim=2) for i, s in enumerate(sentences)]
    widths = {a.shape[1] for a in arrays}
    if len(widths) != 1:
        raise ValueError(f"every sentence needs the same d_model, got widths {sorted(widths)}")
    longest = max(a.shape[0] for a in arrays)
    length = longest if length is None else validate.integer("length", length, low=longest)
    out = np.zeros((len(arrays), length, widths.pop()))
    for i, a in enumerate(arrays):
        out[i, : a.shape[0]] = a
    return out


def padding_experiment(d_model: int = 4, seed: int = 0) -> dict[str, dict[str, float]]:
    """How much the first sentence's real tokens move under each normalisation when
    (a) the batch is padded further and (b) the batch mate is replaced; and (c) under the
    sequence-axis mistake, when the sentence itself gets one more word.

    Returns ``{norm: {"more_padding": Δ, "other_batch_mate": Δ, "one_more_word": Δ}}`` with
    Δ = max |change| of the first sentence's (first three) token outputs.
    """
    d_model = validate.integer("d_model", d_model, low=2, high=512)
    seed = validate.seed(seed)
    rng = np.random.default_rng(seed)
    sentence = rng.normal(size=(3, d_model))  # 我 爱 你
    mate = rng.normal(size=(5, d_model))
    other_mate = rng.normal(loc=2.0, size=(2, d_model))
    extra_word = rng.normal(size=(1, d_model))
    base = padded_batch([sentence, mate])
    variants = {
        "more_padding": padded_batch([sentence, mate], length=8),
        "other_batch_mate": padded_batch([sentence, other_mate]),
        "one_more_word": padded_batch([np.vstack([sentence, extra_word]), mate]),
    }
    norms = {"LayerNorm (d_model)": layer_norm, "BatchNorm (batch × positions)": batch_norm,
             "normalised over the sequence": sequence_axis_norm}
    out: dict[str, dict[str, float]] = {}
    for name, norm in norms.items():
        ref = norm(base)[0, :3]
        out[name] = {k: float(np.abs(norm(v)[0, :3] - ref).max()) for k, v in variants.items()}
    return out
