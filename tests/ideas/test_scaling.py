"""book.ideas.scaling: the measurements of chapter 2 behave as the theory says, at the extremes
too."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tolerance import assert_same_run

from book.ideas import scaling


@pytest.mark.parametrize("d_k", [1, 64, 512])
def test_variance_of_dot_products_is_d_k(d_k):
    raw = scaling.dot_products(d_k, n=20_000)
    assert raw.var() == pytest.approx(d_k, rel=0.05)
    assert (raw / np.sqrt(d_k)).var() == pytest.approx(1.0, rel=0.05)


def test_measurements_repeat_exactly():
    assert_same_run(scaling.dot_products(64, 100), scaling.dot_products(64, 100),
                    why="the same seed, the same computation twice")
    assert scaling.saturation(64) == scaling.saturation(64)
    assert not np.array_equal(scaling.dot_products(64, 100, seed=1),
                              scaling.dot_products(64, 100, seed=2))


def test_saturation_grows_only_without_scaling():
    small, large = scaling.saturation(1, "none"), scaling.saturation(512, "none")
    assert large["max_weight"] > 0.9 > small["max_weight"]
    scaled = [scaling.saturation(d, "sqrt")["max_weight"] for d in (1, 512)]
    assert abs(scaled[0] - scaled[1]) < 0.1
    linear = scaling.saturation(512, "linear")
    assert linear["entropy"] == pytest.approx(linear["uniform_entropy"], rel=0.01)


def test_jacobian_norm_matches_closed_form():
    # autograd's value equals the norm of diag(p) - p pᵀ computed by hand
    rows = scaling.score_rows(32, 8, 50) / 1.0
    p = torch.softmax(torch.tensor(rows), -1)
    closed = (torch.diag_embed(p) - p[:, :, None] * p[:, None, :]).flatten(1).norm(dim=1)
    assert scaling.softmax_jacobian_norm(32, "none", 8, 50) == pytest.approx(
        float(closed.mean()), rel=1e-10)


def test_jacobian_vanishes_when_saturated():
    assert scaling.softmax_jacobian_norm(512, "none") < 0.5 * scaling.softmax_jacobian_norm(
        512, "sqrt")


def test_single_key_row_is_one_hot():
    sat = scaling.saturation(8, n_keys=1)
    assert sat["max_weight"] == 1.0 and sat["entropy"] == 0.0
    assert scaling.softmax_jacobian_norm(8, n_keys=1) == 0.0


def test_sweep_shapes():
    s = scaling.sweep([1, 4], n_rows=20)
    assert s["d_k"] == [1, 4] and len(s["variance"]) == 2
    assert set(s["max_weight"]) == set(scaling.SCALES)


def test_histogram_clips_into_range():
    centres, density = scaling.histogram(np.array([-100.0, 0.0, 100.0]), -1, 1, bins=4)
    assert len(centres) == 4 and density.sum() * 0.5 == pytest.approx(1.0)


@pytest.mark.parametrize("call,err,msg", [
    (lambda: scaling.dot_products(0), ValueError, "at least 1"),
    (lambda: scaling.dot_products(10_000), ValueError, "at most"),
    (lambda: scaling.dot_products(2.5), TypeError, "integer"),
    (lambda: scaling.saturation(8, "cube"), ValueError, "not one of"),
    (lambda: scaling.sweep([]), ValueError, "empty"),
    (lambda: scaling.histogram(np.ones(3), 1, 1), ValueError, "hi > lo"),
    (lambda: scaling.score_rows(True), TypeError, "integer"),
])
def test_bad_input(call, err, msg):
    with pytest.raises(err, match=msg):
        call()
