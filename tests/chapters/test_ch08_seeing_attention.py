"""Chapter 8 (book.chapters.ch08_seeing_attention): the head and model views of the toy
encoder, the relation/category/entropy figures, the live widget (including its bad input:
unknown word, empty text, too long), the chapter's exercise hints, its Chinese edition and
captions that fit a phone screen (the numbers, book.studies.attention_roles, are tested in
tests/studies/test_attention_roles.py)."""

from __future__ import annotations

import json
import re
import unicodedata

import numpy as np
import pytest
from conftest import ENGLISH_PHRASE, FIGURE_TEXT_KEYS, ROOT, figure_texts

from book import chapters
from book.chapters import ch08_seeing_attention
from book.face import checks
from book.kit import i18n
from book.studies import attention_roles as roles
from book.toy import orders, train
from book.toy import probe as probe_mod
from book.toy.model import TinyEncoder

TEXTS = ["一碗牛肉面，不要香菜，多加辣。", "两份招牌炒饭，葱和蒜都不要，辣多放一点。",
         "馄饨三份，牛肉面要一份，多加香菜。"]


@pytest.fixture(scope="module")
def model():
    return train.pretrained()


@pytest.fixture(scope="module")
def small_model():
    return TinyEncoder(d_model=16, n_heads=2, seed=5)


@pytest.fixture(scope="module")
def some_orders():
    return orders.generate(60, seed=3)


def test_head_view_dropdown_and_slider(model):
    fig = ch08_seeing_attention.head_view_figure(model, TEXTS, names=["a", "b", "c"], start=(1, 1))
    assert len(fig.data) == 3 and [t.visible for t in fig.data] == [True, False, False]
    (menu,) = fig.layout.updatemenus
    assert [b.label for b in menu.buttons] == ["a", "b", "c"]
    last = menu.buttons[-1]
    assert last.args[0]["visible"] == [False, False, True]
    assert last.args[1]["annotations"][0]["text"] != fig.layout.annotations[0].text
    assert len(last.args[1]["xaxis.categoryarray"]) == len(orders.tokenize(TEXTS[2]))
    (slider,) = fig.layout.sliders
    assert len(slider.steps) == model.n_layers * model.n_heads
    assert slider.active == 1 * model.n_heads + 1
    zs = {json.dumps(s.args[0]["z"]) for s in slider.steps}
    assert len(zs) == len(slider.steps)   # every head draws different maps
    maps = probe_mod.attention_maps(model, TEXTS[0])
    np.testing.assert_allclose(np.array(fig.data[0].z, dtype=float), maps[1, 1], atol=1e-3)
    assert "✗" in fig.layout.annotations[0].text or "✓" in fig.layout.annotations[0].text
    with pytest.raises(ValueError):
        ch08_seeing_attention.head_view_figure(model, [])
    with pytest.raises(ValueError, match="names"):
        ch08_seeing_attention.head_view_figure(model, TEXTS, names=["a"])


def test_model_view_one_dropdown_redraws_every_map(model):
    fig = ch08_seeing_attention.model_view_figure(model, TEXTS[:2])
    n_maps = model.n_layers * model.n_heads
    assert len(fig.data) == n_maps
    (menu,) = fig.layout.updatemenus
    second = menu.buttons[1].args[0]
    assert len(second["z"]) == n_maps and second["x"][0] != list(fig.data[0].x)
    with pytest.raises(ValueError):
        ch08_seeing_attention.model_view_figure(model, [])


def test_relation_category_and_entropy_figures(small_model, some_orders):
    stats = roles.relation_mass(small_model, some_orders)
    fig = ch08_seeing_attention.relation_figure(stats)
    assert len(fig.data) == len(roles.RELATIONS)
    cats = roles.category_mass(small_model, some_orders)
    fig = ch08_seeing_attention.category_figure(cats)
    assert fig.data[0].y[-1] == "even spread"
    assert len(fig.data[0].y) == small_model.n_layers * small_model.n_heads + 1
    record = {0: np.full((2, 2), 0.9), 10: np.full((2, 2), 0.7)}
    fig = ch08_seeing_attention.entropy_figure(record, np.full((2, 2), 0.5), 500)
    assert len(fig.data) == 4 and list(fig.data[0].x) == [0, 10]
    with pytest.raises(ValueError):
        ch08_seeing_attention.relation_figure({})
    with pytest.raises(ValueError):
        ch08_seeing_attention.entropy_figure({})


def test_live_widget_draws_a_typed_order(model):
    explorer = ch08_seeing_attention.head_view_live(model)
    explorer.update(text=TEXTS[1], layer=0, head=2)
    d = roles.order_maps(model, TEXTS[1])
    np.testing.assert_allclose(np.array(explorer.figure.data[0].z, dtype=float),
                               d["maps"][0, 2], atol=1e-3)
    assert "layer 0 · head 2" in explorer.message.value
    assert explorer.figure.layout.title.text == "layer 0 · head 2"   # the title follows
    assert explorer.message in explorer.widget.children


def test_the_html_twin_carries_the_model_and_the_live_first_state(model, monkeypatch):
    """head_view_inpage: the live view's first figure and controls, the checkpoint's weights
    and the messages with the fields the page fills (its forward pass against torch:
    tests/test_browser_order.py)."""
    import book
    from book.face import display, inpage

    book.setup()
    cell = ch08_seeing_attention.head_view_inpage(model)
    live = ch08_seeing_attention.head_view_live(model)
    assert cell.explorer == "order"
    assert [c["name"] for c in cell.controls] == list(live.controls)
    assert [c["value"] for c in cell.controls] == [live.controls["text"].value,
                                                    str(live.controls["layer"].value),
                                                    str(live.controls["head"].value)]
    assert cell.figure.layout.title.text == live.figure.layout.title.text
    spec = json.loads(cell.spec_json)
    assert spec["model"]["n_layers"] == model.n_layers and spec["max_words"] == orders.MAX_LEN
    assert "{word}" in spec["messages"]["unknown"] and "香菜" in spec["messages"]["unknown"]
    assert "{n}" in spec["messages"]["page_long"] and "{head}" in spec["messages"]["rows_cols"]
    assert 300 < ch08_seeing_attention.page_model_kib(model) < 500
    # the book's build shows the page's twin, Jupyter the live view
    monkeypatch.setenv(display.BUILD_ENV, "1")
    assert isinstance(ch08_seeing_attention.head_view_explorer(model), inpage.InPage)
    monkeypatch.setenv(display.BUILD_ENV, "0")
    assert not isinstance(ch08_seeing_attention.head_view_explorer(model), inpage.InPage)


def test_the_model_views_html_twin_takes_a_typed_order(model, monkeypatch):
    """model_view_inpage: the model view as drawn in the build, a text box holding its first
    order, the spec the page's forward pass needs (its maps against torch:
    tests/test_browser_order.py), and menu entries that put back the first height."""
    import book
    from book.face import display, inpage

    book.setup()
    orders_ = [orders.Order.from_text(t) for t in TEXTS[:2]]
    cell = ch08_seeing_attention.model_view_inpage(model, orders_)
    static = ch08_seeing_attention.model_view_figure(model, orders_)
    assert cell.explorer == "order_model"
    assert [(c["kind"], c["value"]) for c in cell.controls] == [("text", orders_[0].text)]
    assert [t.z for t in cell.figure.data] == [t.z for t in static.data]
    spec = json.loads(cell.spec_json)
    mv = spec["model_view"]
    assert mv["n_heads"] == model.n_heads and spec["max_words"] == 22
    assert cell.figure.layout.annotations[mv["caption"]].text == \
        static.layout.annotations[-1].text
    assert "22" in spec["messages"]["page_long"]
    for button in cell.figure.layout.updatemenus[0].buttons:
        assert button.args[1]["height"] == static.layout.height
        assert button.args[1]["margin.t"] == static.layout.margin.t
    with pytest.raises(ValueError, match="at least one order"):
        ch08_seeing_attention.model_view_inpage(model, [])
    # on the chapter's page the head view carries the weights; the model view refers to them
    shared = json.loads(ch08_seeing_attention.model_view_inpage(
        model, orders_, weights_on_page=True).spec_json)["model"]
    assert shared == {"format": spec["model"]["format"], "same_as": spec["model"]["id"]}
    with pytest.raises(TypeError, match="weights_on_page"):
        ch08_seeing_attention.model_view_inpage(model, orders_, weights_on_page="yes")
    monkeypatch.setenv(display.BUILD_ENV, "1")
    assert isinstance(ch08_seeing_attention.model_view_explorer(model, orders_), inpage.InPage)
    monkeypatch.setenv(display.BUILD_ENV, "0")
    assert not isinstance(ch08_seeing_attention.model_view_explorer(model, orders_),
                          inpage.InPage)


@pytest.mark.parametrize("text,shown", [
    ("一碗牛肉面，不要pizza", "not a word of the order language"),
    ("", "empty"), ("   ", "empty"),
    ("一碗牛肉面，" * 40, "at most 64")])
def test_live_widget_reports_bad_input_in_the_widget(model, text, shown):
    explorer = ch08_seeing_attention.head_view_live(model)
    before = [list(explorer.figure.data[0].x), explorer.figure.data[0].z]
    explorer.update(text=text)   # must not raise
    assert shown in explorer.message.value and "⚠" in explorer.message.value
    assert [list(explorer.figure.data[0].x), explorer.figure.data[0].z] == before
    if "not a word" in shown:
        assert "香菜" in explorer.message.value   # the vocabulary is listed
    explorer.update(text=TEXTS[0])                # and it recovers
    assert "⚠" not in explorer.message.value


def test_live_widget_redraws_every_order(model):
    """Each update redraws (its 50 ms budget is measured by `make bench`, not here)."""
    explorer = ch08_seeing_attention.head_view_live(model)
    before = explorer.redraws
    for i, text in enumerate(TEXTS * 2):
        explorer.update(text=text, layer=i % 2, head=i % 4)
    assert explorer.redraws == before + 2 * len(TEXTS)


def test_chapter8_exercise_hints():
    def msg(key, answer):
        result = checks.check(key, answer)
        assert not result.ok
        return result.message

    assert "Layer 0" in msg("ch8.best_head", (0, 1))
    assert "(layer, head)" in msg("ch8.best_head", 5)
    assert "counted from 0" in msg("ch8.best_head", (2, 0))
    assert "bits" in msg("ch8.row_entropy",
                         lambda p: -(p[p > 0] * np.log2(p[p > 0])).sum())


TOP_KEY_HINTS = [("columns", "读的是列"), ("positions", "位置"), ("diagonal", "对角线"),
                 ("function itself", "函数本身")]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_top_keys_each_mistake_gets_its_own_hint(language):
    """ch8.top_keys: the reference passes; reading the columns (the transpose), returning
    positions, skipping the diagonal and passing a value each get their own hint."""
    i18n.set_language(language)
    try:
        assert checks.check("ch8.top_keys", checks.reference("ch8.top_keys")).ok
        mistakes = chapters.exercises()["ch8.top_keys"].mistakes()
        assert len(mistakes) == len(TOP_KEY_HINTS)
        said = set()
        for wrong, words in zip(mistakes, TOP_KEY_HINTS, strict=True):
            result = checks.check("ch8.top_keys", wrong)
            assert result.status == "bad" and words[language == "zh"] in result.message
            said.add(result.message)
        assert len(said) == len(mistakes)
        short = checks.check("ch8.top_keys", lambda w, t: list(t)[:-1]).message
        assert ("one token per query" if language == "en" else "每个查询一个词元") in short
        other = checks.check("ch8.top_keys", lambda w, t: list(t)).message   # the token itself
        assert ("largest weight" if language == "en" else "最大权重") in other
    finally:
        i18n.set_language("en")


def test_top_keys_reference_reads_the_rows_of_the_trained_maps(model):
    """The reference is the row argmax: it names the key that roles.top_key finds."""
    order = orders.Order.from_text(TEXTS[0])
    maps = probe_mod.attention_maps(model, order)
    top_keys = checks.reference("ch8.top_keys")
    got = top_keys(maps[1, 2], order.tokens)
    assert got == [roles.top_key(model, order, i, 1, 2)["key"] for i in range(len(order))]
    assert got != top_keys(maps[1, 2].T, order.tokens)   # the transpose differs here


def test_top_keys_notebook_solution_passes():
    cells = json.loads((ROOT / "chapters" / "08_seeing_attention.ipynb")
                       .read_text("utf-8"))["cells"]
    source = "".join(next(c for c in cells if c["id"] == "c035")["source"])
    assert "ch8.top_keys" in source
    scope = {"np": np}
    exec(source.split("\n\n\n")[0], scope)
    assert checks.check("ch8.top_keys", scope["top_keys"]).ok


def test_chapter_8_figures_speak_chinese(model, small_model, some_orders, chinese):
    figs = [ch08_seeing_attention.head_view_figure(model, TEXTS, start=(1, 1)),
            ch08_seeing_attention.model_view_figure(model, TEXTS[:2]),
            ch08_seeing_attention.relation_figure(roles.relation_mass(small_model, some_orders)),
            ch08_seeing_attention.category_figure(roles.category_mass(small_model, some_orders)),
            ch08_seeing_attention.entropy_figure({0: np.full((2, 2), 0.9)},
                                                 np.full((2, 2), 0.5), 500)]
    for fig in figs:
        # the category ticks (x, y) too
        english = [t for t in figure_texts(fig, FIGURE_TEXT_KEYS + ("x", "y"))
                   if ENGLISH_PHRASE.search(t)]
        assert not english, english[:5]
    caption = figs[0].layout.annotations[0].text
    assert "a bowl of" not in caption and "模型" in caption and "不要" in caption
    assert roles.head_name(1, 3) == "第 1 层 · 头 3"
    assert "应为" in " ".join(roles.order_view_data(model, TEXTS[2])["marks"])
    ok, message = chapters.exercises()["ch8.row_entropy"].checker(lambda p: 1.0)
    assert not ok and not ENGLISH_PHRASE.search(message)


def test_captions_fit_a_phone_screen(model):
    for language in ("en", "zh"):
        i18n.set_language(language)
        fig = ch08_seeing_attention.head_view_figure(model, TEXTS)
        lines = re.sub(r"<(?!br>)[^>]+>", "", fig.layout.annotations[0].text)
        widest = max(sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)
                     for line in lines.split("<br>"))
        assert widest <= ch08_seeing_attention.CAPTION_WIDTH
    i18n.set_language("en")


def _ch08_figures(model, small_model, some_orders):
    stats = roles.relation_mass(small_model, some_orders)
    cats = roles.category_mass(small_model, some_orders)
    record = {0: np.full((2, 2), 0.9), 10: np.full((2, 2), 0.7)}
    return {"head view": ch08_seeing_attention.head_view_figure(model, TEXTS),
            "model view": ch08_seeing_attention.model_view_figure(model, TEXTS[:2]),
            "typed, live": ch08_seeing_attention.head_view_live(model).figure,
            "typed, page": ch08_seeing_attention.head_view_inpage(model).figure,
            "model view, page": ch08_seeing_attention.model_view_inpage(model, TEXTS[:2]).figure,
            "relations": ch08_seeing_attention.relation_figure(stats),
            "categories": ch08_seeing_attention.category_figure(cats),
            "entropy": ch08_seeing_attention.entropy_figure(record, np.full((2, 2), 0.5), 500)}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_figure_is_described_in_both_languages(model, small_model, some_orders,
                                                     language):
    """Every face of every figure carries its text alternative and caption
    (book.face.figures.describe) in the edition's language."""
    from book.face.figures import described

    try:
        i18n.set_language(language)
        for name, fig in _ch08_figures(model, small_model, some_orders).items():
            fig = fig.to_dict() if hasattr(fig, "to_dict") else fig
            texts = described(fig)
            assert texts is not None, name
            if language == "zh":
                assert all(re.search(r"[\u4e00-\u9fff]", t) for t in texts), (name, texts)
            else:
                assert not any(re.search(r"[\u4e00-\u9fff]", t) for t in texts), (name, texts)
    finally:
        i18n.set_language("en")


def test_caption_numbers_are_the_figures_data(model, small_model, some_orders):
    from book.face.figures import described

    figs = _ch08_figures(model, small_model, some_orders)
    # head view: each layer's mean largest weight of a row, from the slider's drawn maps
    fig = figs["head view"]
    by_layer = {}
    for step in fig.layout.sliders[0].steps:
        layer = int(step.label.split()[0][1:])
        for z in step.args[0]["z"]:
            by_layer.setdefault(layer, []).extend(max(row) for row in z)
    caption = described(fig.to_dict())[1]
    for layer, tops in by_layer.items():
        shown = re.search(rf"([\d.]+) in layer {layer}\b", caption)
        assert shown and abs(float(shown.group(1)) - np.mean(tops)) < 0.006, caption
    assert ("is sharper" in caption) == (np.mean(by_layer[max(by_layer)])
                                         > np.mean(by_layer[0]))
    # relations: the largest lift over chance, as drawn
    fig = figs["relations"]
    caption = described(fig.to_dict())[1]
    relation, mass, chance = re.search(r"“(.+)”: ([\d.]+) vs ([\d]+\.[\d]+)", caption).groups()
    panel = next(i for i, a in enumerate(fig.layout.annotations)
                 if a.text.replace("<br>", " ").startswith(relation + " "))
    assert float(mass) == pytest.approx(np.max(fig.data[panel].z), abs=0.006)
    assert f"(even: {chance})" in fig.layout.annotations[panel].text
    # categories: the largest share of a head, as drawn
    fig = figs["categories"]
    share = float(re.search(r", ([\d.]+) \(even", described(fig.to_dict())[1]).group(1))
    assert share == pytest.approx(np.max(np.asarray(fig.data[0].z)[:-1]), abs=0.006)
    # entropy: each layer's first and last point
    fig = figs["entropy"]
    caption = described(fig.to_dict())[1]
    for layer in (0, 1):
        line = fig.data[2 * layer]
        assert f"layer {layer} {line.y[0]:.2f} → {line.y[-1]:.2f}" in caption
    # the layers differ by dash and marker, and the trained diamonds name their layer
    assert fig.data[0].line.dash != fig.data[2].line.dash
    assert fig.data[0].marker.symbol != fig.data[2].marker.symbol
    assert [fig.data[1].text[0], fig.data[3].text[0]] == ["L0", "L1"]


def test_one_set_of_label_names_in_every_chapter_and_the_in_page_model(model, chinese):
    """Issue 48: the order labels read 去掉/加量/一份 in chapters 4b and 5 but 不要/多加/1 份 in
    chapter 8 and its in-page model. One set now: book.toy.orders.label_name draws them from
    book/strings/common.toml, the set locale/terms.toml's [terms.order_labels] records; no
    chapter's string table keeps a set of its own, and every chapter's label_name, the
    in-page model's spec and chapter 8's captions give that set."""
    import tomllib

    from book.chapters import ch04b_toy_model
    from book.site import terms
    from book.studies import stability

    (row,) = [t for t in terms.terms() if t.id == "order_labels"]
    expected = dict(zip(orders.LABELS, row.zh.split(" / "), strict=True))
    assert {label: orders.label_name(label) for label in orders.LABELS} == expected
    # one source: no other string table names a label
    label_ids = {f"label_{label}" for label in orders.LABELS}
    for path in sorted(i18n.STRINGS_DIR.glob("*.toml")):
        with path.open("rb") as handle:
            own = label_ids & set(tomllib.load(handle))
        assert path.stem == "common" or not own, f"{path.name} names the labels again: {own}"
    for name_of in (ch04b_toy_model.label_name, stability.label_name, roles.label_name):
        assert [name_of(label) for label in orders.LABELS] == list(expected.values()), name_of
    spec = json.loads(ch08_seeing_attention.head_view_inpage(model).spec_json)
    assert spec["label_names"] == expected
    # the views' captions mark each scored word with its label: 香菜 → 去掉, 辣 → 加量
    marks = roles.order_view_data(model, TEXTS[0])["marks"]
    assert any(m.startswith("香菜 → 去掉") for m in marks) and any(
        m.startswith("辣 → 加量") for m in marks), marks
    assert not any(re.search(r"→ (不要|多加|\d 份)", m) for m in marks), marks


def test_the_in_page_models_word_list_is_glossed_in_english(model, monkeypatch):
    """Issue 48: the in-page model's message for an unknown word lists its words; in the
    English edition each with its gloss (book.toy.orders.WORDS), in the Chinese edition as
    they are. The live view says the same."""
    from book.face import display

    monkeypatch.setenv(display.BUILD_ENV, "1")
    listed = json.loads(ch08_seeing_attention.head_view_inpage(model).spec_json)[
        "messages"]["unknown"]
    for word, (english, _, _) in orders.WORDS.items():
        if any(c.isalpha() for c in english) and not english.startswith(word):
            assert f"{word} ({english})" in listed, word
    assert "、 (list comma)" in listed and "香菜 (coriander)" in listed
    with pytest.raises(ValueError, match=r"香菜 \(coriander\)"):
        roles.read_order("一碗牛肉面，不要pizza")
    i18n.set_language("zh")
    try:
        zh = json.loads(ch08_seeing_attention.head_view_inpage(model).spec_json)[
            "messages"]["unknown"]
    finally:
        i18n.set_language("en")
    assert "coriander" not in zh and all(word in zh for word in orders.WORDS)


def test_every_chinese_token_on_an_english_axis_is_glossed(model, monkeypatch):
    """Issue 48: the head view's queries carry their gloss on the axis, its upright keys in
    the hover; the model view's panels have room for neither, so its maps' categories are the
    glossed tokens (the hover names them) and its ticks the bare ones, in every order of its
    menu (tests/gloss_check.py). The Chinese edition keeps its maps as they were."""
    from gloss_check import unglossed

    from book.face import display

    monkeypatch.setenv(display.BUILD_ENV, "1")
    orders_ = [orders.Order.from_text(t) for t in TEXTS]
    figures = {"head view": ch08_seeing_attention.head_view_figure(model, orders_),
               "head view (page)": ch08_seeing_attention.head_view_inpage(model).figure,
               "model view": ch08_seeing_attention.model_view_figure(model, orders_),
               "model view (page)": ch08_seeing_attention.model_view_inpage(
                   model, orders_).figure}
    live = ch08_seeing_attention.head_view_live(model)
    live.update(text=TEXTS[1])
    figures["head view (live)"] = live.figure
    for name, fig in figures.items():
        assert not unglossed(fig), (name, unglossed(fig))
    model_view = figures["model view"]
    assert list(model_view.layout.xaxis.ticktext) == list(model_view.layout.yaxis.ticktext)
    assert "香菜" in model_view.layout.yaxis.ticktext            # the ticks stay bare
    i18n.set_language("zh")
    try:
        zh_head = ch08_seeing_attention.head_view_figure(model, orders_)
        zh_model = ch08_seeing_attention.model_view_figure(model, orders_)
    finally:
        i18n.set_language("en")
    assert zh_head.data[0].customdata is None and "%{x}" in zh_head.data[0].hovertemplate
    assert zh_model.layout.yaxis.ticktext is None and "香菜" in zh_model.data[0].x
