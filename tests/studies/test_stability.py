"""Chapters 5 and 6: book.studies.stability, book.studies.heads, their figures (static faces) and
live faces.

Short runs of tiny data only; the chapters' full sweeps are in tests/bench_pitfalls.py.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from book.chapters import ch05_stability, ch06_heads
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
    fig = ch05_stability.stability_explorer([run])
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
    fig = ch05_stability.stability_explorer(runs, start=1)
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
        ch05_stability.stability_explorer([])
    with pytest.raises(TypeError):
        stability.stability_data("post")


def test_loss_and_norm_figures(runs):
    fig = ch05_stability.loss_curves_figure(runs, "t")
    assert len(fig.data) == 2 and fig.data[1].name == runs[1].label
    fig = ch05_stability.layer_norms_figure(runs, "last")
    assert len(fig.data) == 4 and list(fig.data[0].x) == runs[0].layers
    with pytest.raises(ValueError):
        ch05_stability.layer_norms_figure(runs, "middle")


@pytest.fixture(scope="module")
def models(data):
    return {h: heads.train_heads(h, steps=3, data=data, d_model=16).model for h in (1, 4, 16)}


def test_head_maps_explorer_steps(models):
    order = ch06_heads.HEAD_MAPS_ORDER
    fig = ch06_heads.head_maps_explorer(models, order, start=3)
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == [f"{h}·{layer}" for h in models for layer in (0, 1)]
    for step in steps:
        h, layer = (int(v) for v in step.label.split("·"))
        restyle, relayout = step.args
        maps = probe.attention_maps(models[h], order)[layer]
        assert np.allclose(np.asarray(restyle["z"][h - 1], dtype=float), maps[h - 1], atol=1e-3)
        assert all(z == [] for z in restyle["z"][h:])          # no head there: empty panel
        assert relayout[f"xaxis{h}.visible" if h > 1 else "xaxis.visible"] is True
        if h < ch06_heads.MAX_GRID_HEADS:
            assert relayout[f"xaxis{h + 1}.visible"] is False
        assert relayout["annotations"][h - 1]["text"] == f"head {h - 1}"
        # the grid is sized to the head count: the last head's panel ends at the right edge
        # for 1, 2 and 4 heads (one or two columns), at 16 heads in the fourth column
        assert relayout[f"xaxis{h}.domain" if h > 1 else "xaxis.domain"][1] == 1.0
    labels = fig.data[0].y
    assert len(set(labels)) == len(labels)       # repeated tokens (，) are numbered
    with pytest.raises(ValueError, match="at most 16"):
        heads.head_maps_data(TinyEncoder(d_model=32, n_heads=32), order, 0)


def test_ablation_explorer_and_redundancy_figure(models, data):
    ablations = {h: heads.ablation(m, data[1][:20]) for h, m in models.items()}
    fig = ch06_heads.ablation_explorer(ablations, start=1)
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == ["1", "4", "16"]
    for step, (h, result) in zip(steps, ablations.items(), strict=True):
        assert step.args[0]["y"][0] == [f"head {i}" for i in range(h)]   # heads down the rows
        assert np.allclose(step.args[0]["z"][0], result["drop"].T, atol=1e-3)
    assert list(fig.data[0].y) == ["head 0", "head 1", "head 2", "head 3"]
    red = {h: heads.redundancy(m, data[1][:20]) for h, m in models.items()}
    fig = ch06_heads.redundancy_figure(red, red)
    assert list(fig.data[0].x) == ["4", "16"] and len(fig.data) == 4
    with pytest.raises(ValueError, match="two or more heads"):
        ch06_heads.redundancy_figure({1: red[1]})


def test_heads_sweep_figure(data):
    swept = heads.sweep((1, 2), data=data, d_model=16, steps=2)
    fig = ch06_heads.heads_sweep_figure(swept)
    assert list(fig.data[0].x) == ["1 head<br>d_k = 16", "2 heads<br>d_k = 8"]
    assert np.allclose(fig.data[1].y, [r.loss for r in swept.values()], atol=1e-4)


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



def test_head_maps_live_extremes_and_bad_input(models):
    explorer = ch06_heads.head_maps_live(models)
    for h in (16, 1, 4, 16):
        explorer.update(n_heads=h, layer=0)
        maps = probe.attention_maps(models[h], ch06_heads.HEAD_MAPS_ORDER)[0]
        data = explorer.figure.data
        assert np.allclose(np.asarray(data[h - 1].z, dtype=float), maps[h - 1], atol=1e-3)
        assert all(t.z is None for t in data[h:])
        assert explorer.figure.layout.annotations[h - 1].text == f"head {h - 1}"
        last = "xaxis" if h == 1 else f"xaxis{h}"
        assert explorer.figure.layout[last].visible is not False
        if h < 16:
            assert explorer.figure.layout[f"xaxis{h + 1}"].visible is False
    explorer.update(order="一碗牛肉面，不要香菜")
    assert len(explorer.figure.data[0].x) == 5
    explorer.update(order="一碗 pizza")
    assert explorer.figure.layout.title.text.startswith("cannot read this order")
    explorer.update(order="一碗牛肉面")
    assert "cannot read" not in explorer.figure.layout.title.text



# --- the Chinese edition: no English sentence left in chapter 6's figures -------------------

def _english_words(texts) -> list[str]:
    """Words of three or more Latin letters, apart from the names kept in both editions."""
    import re
    keep = {"d_k", "d_model", "JS", "token", "nats", "ln", "extra", "br"}
    words = re.findall(r"[A-Za-z_]{3,}", " ".join(t for t in texts if t))
    return [w for w in words if w not in keep]


def _figure_texts(fig) -> list[str]:
    layout = fig.layout
    texts = [layout.title.text] + [a.text for a in layout.annotations]
    texts += [getattr(layout[k].title, "text", None) for k in layout
              if k.startswith(("xaxis", "yaxis"))]
    texts += [t.name for t in fig.data] + [t.hovertemplate for t in fig.data]
    for trace in fig.data:
        texts += [str(v) for v in (trace.x or ()) if isinstance(v, str)]
        texts += [str(v) for v in (trace.y or ()) if isinstance(v, str)]
    for slider in layout.sliders:
        texts.append(slider.currentvalue.prefix)
        for step in slider.steps:
            texts.append(step.args[1].get("title.text"))
            texts += [a["text"] for a in step.args[1].get("annotations", [])]
            texts += [v for row in step.args[0].get("x", []) for v in row
                      if isinstance(v, str)]
            texts += [v for row in step.args[0].get("y", []) for v in row
                      if isinstance(v, str)]
    return texts


def test_chapter6_figures_in_chinese(models, data):
    from book.kit import i18n
    i18n.set_language("zh")
    try:
        ablations = {h: heads.ablation(m, data[1][:20]) for h, m in models.items()}
        red = {h: heads.redundancy(m, data[1][:20]) for h, m in models.items()}
        figures = [ch06_heads.head_maps_explorer(models, ch06_heads.HEAD_MAPS_ORDER),
                   ch06_heads.ablation_explorer(ablations),
                   ch06_heads.redundancy_figure(red, red),
                   ch06_heads.heads_sweep_figure(heads.sweep((1, 2), data=data, d_model=16,
                                                             steps=2))]
        for fig in figures:
            texts = _figure_texts(fig)
            assert _english_words(texts) == [], texts
        # the Chinese edition labels the tokens alone, no English gloss
        assert all("(" not in label for label in figures[0].data[0].y)
        assert figures[0].layout.annotations[0].text == "头 0"
        message = ch06_heads._ch6_parameters_check(4 * 64 * 64)[1]
        assert "偏置" in message and _english_words([message]) == []
    finally:
        i18n.set_language("en")
    # and English is back: glossed query labels, English titles
    fig = ch06_heads.head_maps_explorer(models, ch06_heads.HEAD_MAPS_ORDER)
    assert any("(" in label for label in fig.data[0].y)
    assert fig.layout.annotations[0].text == "head 0"


def test_chapter6_verdicts_follow_the_numbers():
    from types import SimpleNamespace as Run

    def runs(**acc):
        return {int(h[1:]): Run(accuracy=a) for h, a in acc.items()}

    v = ch06_heads.sweep_verdicts(runs(h1=0.70, h2=0.69, h16=0.65), Run(accuracy=0.66))
    assert v["worse_verdict"].startswith("Yes") and "came last" in v["direction_verdict"]
    v = ch06_heads.sweep_verdicts(runs(h1=0.70, h2=0.69, h16=0.65), Run(accuracy=0.60))
    assert v["worse_verdict"].startswith("A little") and "say nothing" in v["noise_verdict"]
    v = ch06_heads.sweep_verdicts(runs(h1=0.61, h2=0.63, h16=0.632), Run(accuracy=0.58))
    assert v["worse_verdict"] == "Not at this size." and "did not" in v["summary_direction"]
    with pytest.raises(ValueError, match="one-head"):
        ch06_heads.sweep_verdicts(runs(h2=0.6, h4=0.6), Run(accuracy=0.6))
    assert ch06_heads.js_verdict([0.25, 0.40], [0.24, 0.39]).endswith("as 2 do.")
    assert "less so in layer 1 (0.35 against 0.46)" in ch06_heads.js_verdict([0.23, 0.46],
                                                                              [0.21, 0.35])
    assert "more so in layer 0" in ch06_heads.js_verdict([0.20, 0.40], [0.30, 0.40])
    with pytest.raises(ValueError, match="same layers"):
        ch06_heads.js_verdict([0.2], [0.2, 0.3])
