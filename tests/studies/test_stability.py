"""book.studies.stability and book.studies.heads (chapters 5 and 6), and chapter 5's stability
explorer (static and live faces; they share this file's two short runs). Chapter 6's figures and
explorers: tests/chapters/test_ch06_heads.py.

Short runs of tiny data only; the chapters' full sweeps are in tests/bench_pitfalls.py.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from book.chapters import ch05_stability
from book.studies import heads, stability
from book.toy import orders as O
from book.toy import probe
from book.toy.model import TinyEncoder

pytestmark = pytest.mark.usefixtures("one_thread")  # see conftest.py


@pytest.fixture(scope="module")
def data():
    return O.train_test_split(O.generate(300, seed=7), 0.2, seed=7)


@pytest.fixture(scope="module")
def runs(data):
    return [stability.run("post", "xavier", 2, steps=12, data=data),
            stability.run("pre", "large", 3, 3e-3, steps=12, data=data)]


# --- book.studies.stability
# -------------------------------------------------------------------------

def test_chance_loss_and_labels():
    assert stability.chance_loss() == pytest.approx(math.log(7))
    assert stability.config_label("post", "xavier", 6, 0.01) == \
        "Post-LN · Xavier · 6 layers · lr 0.01"
    assert stability.config_label("none", "large", 1) == "no LayerNorm · N(0, 1) · 1 layer"
    with pytest.raises(ValueError, match="norm='mid'"):
        stability.config_label("mid", "xavier", 2, 0.01)
    with pytest.raises(ValueError, match="too small"):
        stability.run("pre", "xavier", 0)
    with pytest.raises(TypeError):
        stability.run("pre", "xavier", 2.5)


def test_run_records_every_layer_and_repeats_bit_for_bit(data, runs):
    first = runs[0]
    again = stability.run("post", "xavier", 2, steps=12, data=data)
    assert first.loss == again.loss and first.grad_norm == again.grad_norm
    assert first.accuracy == again.accuracy and 0 <= first.accuracy <= 1
    assert first.layers == ["embedding", "layer 0", "layer 1"]
    assert first.norm_steps == [1, 6, 11]   # every record_every = 5 steps
    assert len(first.profile("activation", "first")) == 3
    # Post-LN: every block's output is a LayerNorm output, RMS 1 at step 1
    assert np.allclose(first.profile("activation", "first")[1:], 1.0, atol=1e-3)
    assert first.final_loss(4) == pytest.approx(np.mean(first.loss[-4:]))
    assert first.key == ("post", "xavier", 2, 0.01)
    with pytest.raises(ValueError, match="what="):
        first.profile("weights")


def test_at_init_measures_without_training(data):
    fresh = stability.at_init("none", "large", 3, data=data)
    assert fresh.steps == 1 and len(fresh.loss) == 1 and fresh.accuracy is None
    assert "lr" not in fresh.label
    rms = fresh.profile("activation")
    assert all(b > 5 * a for a, b in zip(rms[1:], rms[2:], strict=False))   # explodes
    calm = stability.at_init("post", "xavier", 3, data=data)
    assert np.allclose(calm.profile()[1:], 1.0, atol=1e-3)
    assert calm.loss == stability.at_init("post", "xavier", 3, data=data).loss


def test_diverged_run(data):
    run = stability.run("none", "large", 8, steps=3, data=data)
    assert run.diverged and run.accuracy is None and run.final_loss() == math.inf
    assert run.profile() == []
    fig = ch05_stability.stability_figure([run])
    assert "diverged" in fig.layout.title.text


def test_smooth_and_frequency_baseline(data):
    assert np.allclose(stability.smooth([1, 3, 5, 7], 2), [1, 2, 4, 6])
    assert np.isinf(stability.smooth([1, np.inf, 1], 2)[1])
    with pytest.raises(ValueError, match="1-D"):
        stability.smooth([[1, 2]])
    base = stability.frequency_baseline(data)
    assert base["label"] in O.LABELS
    scored = [lab for o in data[1][:stability.TEST_ORDERS] for lab in o.labels if lab != O.NONE]
    assert base["accuracy"] == pytest.approx(scored.count(base["label"]) / len(scored))
    assert math.log(2) < base["loss"] < 1.1 * math.log(7)
    # one source for chapters 4b and 5: over all test orders, chapter 4b's number exactly
    from book.chapters import ch04b_toy_model

    every = stability.frequency_baseline(data, test_orders=None)
    assert every["loss"] == ch04b_toy_model.frequency_loss(data[0], data[1])
    from book.toy import baselines

    with pytest.raises(ValueError, match="never has"):   # one training order lacks labels
        baselines.label_frequencies(data[0][:1], data[1])


# --- book.studies.heads
# -----------------------------------------------------------------------------

def test_parameters_do_not_depend_on_heads():
    counts = {heads.attention_parameters(64, h) for h in (1, 2, 4, 8, 16, 64)}
    assert counts == {4 * (64 * 64 + 64)}


def test_js_divergence_properties():
    p = np.array([0.7, 0.2, 0.1, 0.0])
    q = np.array([0.0, 0.1, 0.3, 0.6])
    assert heads.js_divergence(p, p) == pytest.approx(0.0, abs=1e-12)
    assert heads.js_divergence([1, 0], [0, 1]) == pytest.approx(math.log(2))
    assert heads.js_divergence(p, q) == pytest.approx(heads.js_divergence(q, p))
    m = (p + q) / 2

    def kl(a):
        keep = a > 0
        return np.sum(a[keep] * np.log(a[keep] / m[keep]))

    assert heads.js_divergence(p, q) == pytest.approx(0.5 * kl(p) + 0.5 * kl(q))
    with pytest.raises(ValueError, match="same shape"):
        heads.js_divergence([1.0], [0.5, 0.5])


def test_pairwise_on_hand_made_maps():
    eye = np.eye(3)
    maps = np.stack([eye, eye, eye[::-1], np.full((3, 3), 1 / 3)])
    js = heads.pairwise(maps, "js")
    assert js.shape == (4, 4) and np.allclose(np.diag(js), 0)
    assert js[0, 1] == pytest.approx(0) and js[0, 2] == pytest.approx(2 / 3 * math.log(2))
    cos = heads.pairwise(maps, "cosine")
    assert np.allclose(np.diag(cos), 1) and cos[0, 1] == pytest.approx(1)
    assert cos[0, 2] == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="rows = queries"):
        heads.pairwise(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="metric"):
        heads.pairwise(maps, "kl")


@pytest.fixture(scope="module")
def four_heads(data):
    return heads.train_heads(4, steps=15, data=data, d_model=16)


def test_train_heads_and_sweep(data, four_heads):
    assert four_heads.d_k == 4 and four_heads.model.n_heads == 4
    assert four_heads.accuracy == pytest.approx(probe.accuracy(
        four_heads.model, data[1][:heads.TEST_ORDERS]))
    assert four_heads.seconds_per_step > 0
    swept = heads.sweep((1, 2), data=data, d_model=16, steps=3)
    assert list(swept) == [1, 2] and swept[2].d_k == 8
    assert swept[1].parameters == swept[2].parameters
    with pytest.raises(ValueError, match="not divisible"):
        heads.train_heads(3, data=data, d_model=16, steps=1)
    with pytest.raises(ValueError, match="empty"):
        heads.sweep((), data=data)


def test_similarity_matches_pairwise_on_one_order(four_heads, data):
    model, order = four_heads.model, data[1][0]
    maps = probe.attention_maps(model, order)
    for metric in heads.METRICS:
        sim = heads.similarity(model, [order], metric)
        assert sim.shape == (2, 4, 4)
        for layer in range(2):
            assert np.allclose(sim[layer], heads.pairwise(maps[layer], metric), atol=1e-6)
    # over several orders (padded batches): the JS average counts every real query once
    orders = data[1][:5]
    weights = [len(o) for o in orders]
    per_order = [heads.pairwise(probe.attention_maps(model, o)[1], "js") for o in orders]
    expected = np.average(per_order, axis=0, weights=weights)
    assert np.allclose(heads.similarity(model, orders)[1], expected, atol=1e-6)
    red = heads.redundancy(model, orders)
    assert red.shape == (2,) and np.all((red > 0) & (red < math.log(2)))
    one = TinyEncoder(d_model=16, n_heads=1)
    assert np.isnan(heads.redundancy(one, orders)).all()


def test_ablation_agrees_with_the_library(four_heads, data):
    orders = data[1][:30]
    result = heads.ablation(four_heads.model, orders)
    assert result["accuracy"].shape == (2, 4)
    assert np.allclose(result["accuracy"], probe.ablation_table(four_heads.model, orders))
    one = probe.head_ablation(four_heads.model, orders, 1, 2)
    assert result["loss"][1, 2] == pytest.approx(one["loss"], rel=1e-5)
    assert result["base_accuracy"] == pytest.approx(one["base_accuracy"])
    assert np.allclose(result["drop"], 100 * (result["base_accuracy"] - result["accuracy"]))


# --- figures: the static faces --------------------------------------------------------------

def test_stability_explorer_buttons_carry_each_run(runs):
    fig = ch05_stability.stability_figure(runs, start=1)
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == [r.label for r in runs]
    for button, run in zip(buttons, runs, strict=True):
        restyle, relayout = button.args
        data = stability.stability_data(run)
        assert restyle["x"][1] == run.layers
        assert np.allclose(restyle["y"][0], data["loss"], atol=1e-3)
        assert np.allclose(restyle["y"][4], run.profile("gradient", "last"), rtol=1e-3)
        assert relayout["title.text"] == data["title"]
    assert buttons[0].args[0]["y"] != buttons[1].args[0]["y"]
    assert fig.layout.title.text == stability.stability_data(runs[1])["title"]
    json.loads(fig.to_json())
    with pytest.raises(ValueError, match="empty"):
        ch05_stability.stability_figure([])
    with pytest.raises(TypeError):
        stability.stability_data("post")


def test_loss_and_norm_figures(runs):
    fig = ch05_stability.loss_curves_figure(runs, "t")
    assert len(fig.data) == 2 and fig.data[1].name == runs[1].label
    fig = ch05_stability.layer_norms_figure(runs, "last")
    assert len(fig.data) == 4 and list(fig.data[0].x) == runs[0].layers
    with pytest.raises(ValueError):
        ch05_stability.layer_norms_figure(runs, "middle")


# --- widgets: the live faces ----------------------------------------------------------------

def test_stability_live_draws_cached_runs_and_trains_new_ones(runs, data):
    explorer = ch05_stability.stability_live(runs, data=data, steps=4)
    assert explorer.figure.layout.title.text == stability.stability_data(runs[0])["title"]
    explorer.update(norm="pre", init="large", n_layers=3, lr=3e-3)
    assert list(explorer.figure.data[0].y) == pytest.approx(
        stability.stability_data(runs[1])["loss"], abs=1e-3)
    explorer.update(n_layers=5)                     # not trained: nothing drawn, no training
    assert "not trained yet" in explorer.figure.layout.title.text
    assert explorer.figure.data[0].y in (None, ()) or len(explorer.figure.data[0].y) == 0
    assert len(explorer.runs) == 2
    new = explorer.train()                           # the button's action
    assert new.key == ("pre", "large", 5, 3e-3) and new.steps == 4
    assert len(explorer.runs) == 3 and "not trained" not in explorer.figure.layout.title.text
    explorer.controls["norm"].value = "post"          # a reader's change redraws too
    assert "not trained yet" in explorer.figure.layout.title.text
