"""The head view and the model view (book.face.views), drawn from plain arrays, and the two
chapters that use them (8: the toy encoder, 8b: the pretrained model)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from book.chapters import ch08_seeing_attention, ch08b_real_model
from book.face import views
from book.face.views import Sentence
from book.kit import i18n
from book.toy import train


def _maps(layers=2, heads=4, n=3, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.random((layers, heads, n, n))
    return w / w.sum(-1, keepdims=True)


def _sentences(layers=2, heads=4):
    return [Sentence(_maps(layers, heads, 3, 0), ["a", "b", "c"], "first"),
            Sentence(_maps(layers, heads, 4, 1), ["w", "x", "y", "z"], "second",
                     queries=["w (1)", "x (2)", "y (3)", "z (4)"])]


# ---- head view --------------------------------------------------------------------------

def test_head_view_dropdown_picks_the_sentence_slider_the_head():
    s = _sentences()
    fig = views.head_view(s, ["one", "two"], start=(1, 2), digits=3, slider_prefix="head: ")
    assert [t.visible for t in fig.data] == [True, False]
    assert list(fig.data[1].y) == ["w (1)", "x (2)", "y (3)", "z (4)"]
    np.testing.assert_allclose(np.array(fig.data[0].z), s[0].maps[1, 2], atol=5e-4)
    (menu,) = fig.layout.updatemenus
    assert [b.label for b in menu.buttons] == ["one", "two"]
    second = menu.buttons[1].args
    assert second[0] == {"visible": [False, True]}
    assert second[1]["xaxis.categoryarray"] == ["w", "x", "y", "z"]
    assert second[1]["yaxis.range"] == [3.5, -0.5]          # first query on top
    assert second[1]["annotations"][0]["text"] == "second"
    (slider,) = fig.layout.sliders
    assert len(slider.steps) == 8 and slider.active == 1 * 4 + 2
    assert slider.currentvalue.prefix == "head: "
    step = slider.steps[7]
    assert step.label == "L1 H3" and step.args[1] == {"title.text": "layer 1 · head 3"}
    np.testing.assert_allclose(np.array(step.args[0]["z"][1]), s[1].maps[1, 3], atol=5e-4)
    assert fig.layout.title.text == "layer 1 · head 2"
    assert fig.data[0].hovertemplate.endswith("weight %{z:.3f}<extra></extra>")


def test_head_view_options_are_laid_over_the_defaults():
    fig = views.head_view(_sentences(), ["one", "two"],
                          menu={"direction": "up", "y": 0, "pad": {"t": 240}},
                          caption={"font": {"size": 11}},
                          key_axis={"title": {"standoff": 28}},
                          layout={"margin": {"t": 190}, "height": 700})
    menu = fig.layout.updatemenus[0]
    assert (menu.direction, menu.y, menu.pad.t, menu.x) == ("up", 0, 240, 0)
    assert fig.layout.annotations[0].font.size == 11 and fig.layout.annotations[0].y == 1.02
    assert fig.layout.xaxis.title.standoff == 28 and fig.layout.xaxis.title.text == "key " \
        "(attended to)"
    assert (fig.layout.margin.t, fig.layout.margin.l, fig.layout.height) == (190, 40, 700)


def test_the_views_speak_the_book_language():
    i18n.set_language("zh")
    try:
        fig = views.head_view(_sentences(), ["一", "二"])
        assert fig.layout.title.text == "第 0 层 · 头 0"
        assert fig.layout.xaxis.title.text == "键（被关注）"
        model = views.model_view(_sentences(), ["一", "二"])
        assert model.layout.title.text == "第 0 层：它的 4 个头"
        assert model.layout.sliders[0].steps[1].label == "第 1 层"
    finally:
        i18n.set_language("en")


# ---- model view -------------------------------------------------------------------------

def test_model_view_one_trace_per_sentence():
    s = _sentences(layers=3, heads=4)
    fig = views.model_view(s, ["one", "two"], layer=2, grid=(2, 2))
    assert len(fig.data) == 2 * 4
    assert [t.visible for t in fig.data] == [True] * 4 + [False] * 4
    np.testing.assert_allclose(np.array(fig.data[5].z), s[1].maps[2, 1], atol=5e-3)
    second = fig.layout.updatemenus[0].buttons[1].args
    assert second[0]["visible"] == [False] * 4 + [True] * 4
    assert second[1]["xaxis4.categoryarray"] == ["w", "x", "y", "z"]
    assert second[1]["annotations"][-1]["text"] == "second"
    assert [a["text"] for a in second[1]["annotations"][:4]] == ["H0", "H1", "H2", "H3"]
    steps = fig.layout.sliders[0].steps
    assert len(steps) == 3 and fig.layout.sliders[0].active == 2
    assert len(steps[0].args[0]["z"]) == 8
    np.testing.assert_allclose(np.array(steps[0].args[0]["z"][6]), s[1].maps[0, 2], atol=5e-3)
    assert fig.layout.xaxis3.categoryorder == "array"


def test_model_view_one_trace_per_layer():
    s = _sentences(layers=3, heads=4)
    fig = views.model_view(s, ["one", "two"], one_trace_per="layer", layer=1,
                           panel_titles=[f"head {h}" for h in range(4)], panel_title_size=12)
    assert len(fig.data) == 3 * 4    # default grid: two columns
    assert [t.visible for t in fig.data] == [lay == 1 for lay in range(3) for _ in range(4)]
    assert fig.data[5].hovertemplate.startswith("layer 1 · head 1<br>")
    second = fig.layout.updatemenus[0].buttons[1].args
    assert len(second[0]["z"]) == 12 and second[0]["x"][0] == ["w", "x", "y", "z"]
    np.testing.assert_allclose(np.array(second[0]["z"][11]), s[1].maps[2, 3], atol=5e-3)
    steps = fig.layout.sliders[0].steps
    assert steps[2].args[0]["visible"] == [lay == 2 for lay in range(3) for _ in range(4)]
    assert fig.layout.annotations[0].text == "head 0" and fig.layout.annotations[0].font.size == 12
    assert fig.layout.yaxis.autorange == "reversed"


@pytest.mark.parametrize("one_trace_per", ["layer", "sentence"])
def test_model_view_thins_the_key_labels_of_a_long_sentence(one_trace_per):
    """key_labels=3: the 3-key sentence labels every key, the 4-key one every second key, in
    the first state and on its menu button, under every panel; None leaves plotly's ticks."""
    s = _sentences(layers=2, heads=4)
    fig = views.model_view(s, ["one", "two"], one_trace_per=one_trace_per, key_labels=3)
    axes = ["xaxis", "xaxis2", "xaxis3", "xaxis4"]
    assert all(list(fig.layout[a].tickvals) == ["a", "b", "c"] for a in axes)
    buttons = fig.layout.updatemenus[0].buttons
    assert all(buttons[0].args[1][f"{a}.tickvals"] == ["a", "b", "c"] for a in axes)
    assert all(buttons[1].args[1][f"{a}.tickvals"] == ["w", "y"] for a in axes)
    plotlys = views.model_view(s, ["one", "two"], one_trace_per=one_trace_per)
    assert plotlys.layout.xaxis.tickvals is None      # plotly's own ticks, as before
    assert "xaxis.tickvals" not in plotlys.layout.updatemenus[0].buttons[1].args[1]
    with pytest.raises(ValueError, match="key_labels"):
        views.model_view(s, ["one", "two"], key_labels=0)


def test_views_refuse_bad_input_naming_the_argument():
    s = _sentences()
    cases = [
        (lambda: views.head_view([], []), ValueError, "sentences is empty"),
        (lambda: views.head_view(None, []), TypeError, "sentences must be a list"),
        (lambda: views.head_view([_maps()], ["a"]), TypeError, r"sentences\[0\] must be"),
        (lambda: views.head_view(s, ["only one"]), ValueError, "2 sentences but 1 names"),
        (lambda: views.head_view(s, ["a", "b"], start=(2, 0)), ValueError, "layer=2"),
        (lambda: views.head_view(s, ["a", "b"], start=3), TypeError, "start must be"),
        (lambda: views.head_view(s, ["a", "b"], menu="up"), TypeError, "menu must be a dict"),
        (lambda: views.head_view([s[0], Sentence(_maps(3), ["a", "b", "c"])], ["a", "b"]),
         ValueError, "draw the maps of one model"),
        (lambda: views.model_view(s, ["a", "b"], one_trace_per="head"), ValueError,
         "one_trace_per"),
        (lambda: views.model_view(s, ["a", "b"], grid=(1, 2)), ValueError, "2 panels for 4"),
        (lambda: views.model_view(s, ["a", "b"], panel_titles=["x"]), ValueError,
         "1 panel_titles for 4 heads"),
        (lambda: Sentence(_maps(), ["a", "a", "b"]), ValueError, r"keys must be unique.*'a'"),
        (lambda: Sentence(_maps(), ["a", "b"]), ValueError, "2 key labels"),
        (lambda: Sentence(_maps()[0], ["a", "b", "c"]), ValueError, "maps must be 4-D"),
        (lambda: Sentence(_maps(), None), TypeError, "keys must be a list"),
        (lambda: Sentence(_maps(), ["a", "b", "c"], caption=None), TypeError, "caption"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()


# ---- the chapters draw through the views ------------------------------------------------

def test_chapter_8_draws_the_toy_encoder_through_the_views(monkeypatch):
    model = train.pretrained()
    calls = []
    for name in ("head_view", "model_view"):
        real = getattr(views, name)
        monkeypatch.setattr(views, name, lambda *a, _real=real, _name=name, **k: (
            calls.append((_name, a, k)) or _real(*a, **k)))
    orders_ = ["一碗牛肉面，不要香菜，多加辣。", "馄饨三份，牛肉面要一份，多加香菜。"]
    head = ch08_seeing_attention.head_view_figure(model, orders_, ["a", "b"], start=(1, 0))
    ch08_seeing_attention.model_view_figure(model, orders_, start_layer=1)
    (_, (sentences, names), kwargs), (_, (m_sentences, _), m_kwargs) = calls
    assert names == ["a", "b"] and kwargs["start"] == (1, 0) and kwargs["digits"] == 3
    assert sentences[0].keys != sentences[0].queries   # rows carry the glosses
    assert m_sentences[0].queries == m_sentences[0].keys
    assert m_kwargs["one_trace_per"] == "layer" and m_kwargs["layer"] == 1
    assert head.layout.updatemenus[0].direction == "up"   # below the plot, opening up


def test_chapter_8b_draws_the_pretrained_model_through_the_views(monkeypatch):
    """The chapter turns view_data into Sentences (labels, wrapped caption); a fake model of
    6 layers × 12 heads stands in for the download."""
    def view_data(model, text):
        words = text.split()
        return {"text": text, "labels": words, "maps": _maps(6, 12, len(words)), "n_unk": 0,
                "caption": f"“{text}”: {len(words)} tokens"}

    monkeypatch.setattr(ch08b_real_model.pretrained, "view_data", view_data)
    model = SimpleNamespace(config=SimpleNamespace(n_layers=6, n_heads=12))
    texts = ["the cat sat", "a dog ran off"]
    head = ch08b_real_model.head_view_figure(model, texts, ["cat", "dog"], start=(2, 8))
    assert len(head.data) == 2 and head.layout.sliders[0].active == 2 * 12 + 8
    assert head.layout.annotations[0].text == "<span>“the cat sat”: 3 tokens</span>"
    model_fig = ch08b_real_model.model_view_figure(model, texts, layer=3)
    assert len(model_fig.data) == 24 and model_fig.layout.sliders[0].active == 3
    assert model_fig.layout.annotations[0].text == "H0"
    assert json.dumps(model_fig.layout.updatemenus[0].buttons[1].args[1]["xaxis12.categoryarray"]
                      ) == json.dumps(["a", "dog", "ran", "off"])
    with pytest.raises(ValueError, match="max_tokens=2"):
        ch08b_real_model.model_view_figure(model, texts, max_tokens=2)
