"""book.ideas.norms: LayerNorm is immune to padding and batch mates; BatchNorm and the sequence-axis
mistake are not. Compared with torch's own layers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from book.ideas import norms


def test_layer_norm_matches_torch():
    x = np.random.default_rng(0).normal(size=(2, 5, 4))
    ref = torch.nn.functional.layer_norm(torch.tensor(x), (4,), eps=norms.EPS).numpy()
    np.testing.assert_allclose(norms.layer_norm(x), ref, atol=1e-12)


def test_batch_norm_matches_torch_training_statistics():
    x = np.random.default_rng(1).normal(size=(3, 5, 4))
    bn = torch.nn.BatchNorm1d(4, eps=norms.EPS, affine=False, dtype=torch.float64).train()
    ref = bn(torch.tensor(x).transpose(1, 2)).transpose(1, 2).detach().numpy()
    np.testing.assert_allclose(norms.batch_norm(x), ref, atol=1e-12)


def test_padding_experiment():
    moves = norms.padding_experiment()
    # exact: each token's row goes through the same row-wise computation in both batches
    assert max(moves["LayerNorm (d_model)"].values()) == 0.0
    assert min(moves["BatchNorm (batch × positions)"].values()) > 0.05
    assert moves["normalised over the sequence"]["one_more_word"] > 0.05


def test_padded_batch():
    batch = norms.padded_batch([np.ones((2, 3)), np.ones((4, 3))], length=6)
    assert batch.shape == (2, 6, 3) and batch[0, 2:].sum() == 0
    with pytest.raises(ValueError, match="same d_model"):
        norms.padded_batch([np.ones((2, 3)), np.ones((2, 4))])
    with pytest.raises(ValueError, match="at least 4"):
        norms.padded_batch([np.ones((4, 3))], length=2)
    with pytest.raises(TypeError, match="non-empty list"):
        norms.padded_batch([])


def test_single_token_and_bad_input():
    assert np.all(norms.layer_norm(np.ones((1, 4))) == 0)
    with pytest.raises(ValueError, match="3-D"):
        norms.batch_norm(np.ones((2, 2)))
    with pytest.raises(ValueError, match="at least 2"):
        norms.padding_experiment(d_model=1)
