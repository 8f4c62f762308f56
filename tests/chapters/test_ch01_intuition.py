"""Chapter 1's heads explorer; and chapters 1-3 in Chinese: their figures, widgets and exercise
messages leave no English sentence behind (code names, formulas and tokens excepted), and their
string-table sections are complete (one test covers the three chapters)."""

from __future__ import annotations

import re

import faces
import numpy as np
import pytest

from book import chapters
from book.chapters import ch01_intuition, ch02_scaling, ch03_walkthrough
from book.face import checks
from book.face.figures import described
from book.ideas import norms, scaling
from book.kit import i18n
from book.toy import orders_example

# words that stay as they are in Chinese: code identifiers, formula names, units of plotly
ALLOWED = {"softmax", "var", "ln", "d_k", "d_model", "n_heads", "LayerNorm", "residual",
           "output", "Frobenius", "exp", "max", "extra", "scores", "sum", "ddof", "mean",
           "rows", "columns", "my_softmax", "scaled_scores", "layer_norm", "S1_scaled", "inf",
           "NaN", "key", "Q", "K", "V", "W_O", "X", "br", "b", "ε"}
WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def english_words(text: str) -> list[str]:
    text = re.sub(r"%\{[^}]*\}", "", text)           # plotly's %{x} placeholders
    text = re.sub(r"<[^>]+>", " ", text)             # <br>, <b>, <extra>
    return [w for w in WORD.findall(text)
            if w not in ALLOWED and len(w) > 2 and "_" not in w  # code names: W_Q1, S1_scaled
            and not re.fullmatch(r"[A-Z]\d*|[a-z]\d+", w)]


def figure_texts(fig) -> list[str]:
    """Every text a reader can see in ``fig``, in every state of its sliders and menus."""
    layout = fig.layout.to_plotly_json()
    texts = [str(layout.get("title", {}).get("text", ""))]
    texts += list(described(fig.to_dict()) or ())  # its text alternative and caption
    texts += [a.get("text", "") for a in layout.get("annotations", [])]
    for key, axis in layout.items():
        if key.startswith(("xaxis", "yaxis")):
            texts.append(str(axis.get("title", {}).get("text", "")))
    for trace in fig.data:
        t = trace.to_plotly_json()
        texts += [str(t.get("name", "")), str(t.get("hovertemplate", ""))]
        texts.append(str(t.get("colorbar", {}).get("title", {}).get("text", "")))
        for key in ("x", "y"):
            values = t.get(key)
            texts += [v for v in ([] if values is None else list(values)) if isinstance(v, str)]
    for slider in layout.get("sliders", []):
        texts.append(str(slider.get("currentvalue", {}).get("prefix", "")))
        for step in slider.get("steps", []):
            data, lay = (step["args"] + [{}, {}])[:2]
            texts.append(str(lay.get("title.text", "")))
            texts += [a.get("text", "") for a in lay.get("annotations", [])]
            for key in ("x", "y"):
                for values in data.get(key, []) or []:
                    texts += [v for v in values if isinstance(v, str)]
    return [t for t in texts if t]


def _figures():
    sweep = scaling.sweep(d_ks=[1, 64])
    return [ch01_intuition.heads_figure(),
            ch01_intuition.one_head_figure(orders_example.head_weights(["quantity ↔ dish"])),
            ch01_intuition.menu_figure(orders_example.menu_match()),
            ch02_scaling.dk_figure([1, 64]), ch02_scaling.softmax_row_figure([1, 64]),
            ch02_scaling.variance_figure(sweep), ch02_scaling.saturation_figure(sweep),
            ch02_scaling.jacobian_figure(sweep), ch02_scaling.exam_figure(),
            ch03_walkthrough.walkthrough_figure()]


@pytest.fixture
def chinese():
    i18n.set_language("zh")
    yield
    i18n.set_language("en")


def test_figures_in_chinese_have_no_english_left(chinese):
    for fig in _figures():
        for text in figure_texts(fig):
            assert not english_words(text), f"English left in {text!r}"


def test_figures_in_english_keep_their_titles():
    i18n.set_language("en")
    fig = ch01_intuition.menu_figure(orders_example.menu_match())
    assert fig.layout.title.text.startswith("Request: spicy, no coriander, noodles")
    assert "牛肉面<br>(beef noodles,<br>coriander on top)" in fig.data[0].y
    assert "density" in ch02_scaling.dk_figure([1, 64]).layout.yaxis.title.text


def test_chinese_labels_drop_the_glosses(chinese):
    fig = ch01_intuition.menu_figure(orders_example.menu_match())
    assert list(fig.data[0].y) == ["牛肉面<br>（上面撒香菜）", "麻辣面", "炒饭"]
    from book.ideas import walkthrough
    assert walkthrough.token_labels() == ["我", "爱", "你"]
    table = ch03_walkthrough.padding_table(norms.padding_experiment())
    assert "层归一化" in table and not english_words(table.replace("d_model", ""))


def test_live_widgets_in_chinese(chinese):
    for live in (ch01_intuition.heads_live(), ch02_scaling.dk_live(),
                 ch02_scaling.softmax_row_live(), ch03_walkthrough.walkthrough_live()):
        for control in live.controls.values():
            assert not english_words(control.description), control.description
        live.update()
        for text in figure_texts(live.figure):
            assert not english_words(text), f"English left in {text!r}"


def test_heads_live_is_not_built_from_heads_figure(monkeypatch):
    """The two faces are siblings (both start from _heads_plot): the live face never calls
    the static one."""
    faces.forbid(monkeypatch, ch01_intuition, "heads_figure")
    live = ch01_intuition.heads_live()
    live.update(n_heads=3)
    assert not live.figure.layout.sliders and all(t.z for t in live.figure.data)


def test_exercise_messages_in_chinese(chinese):
    for key, ex in chapters.exercises().items():
        if not key.startswith(("ch1.", "ch2.", "ch3.")):
            continue
        for wrong in ex.mistakes():
            message = checks.check(key, wrong).message
            if message.startswith(("Expected shape", "Your answer raised")):
                continue  # book.face.checks' own words (shared module)
            assert not english_words(message), f"{key}: {message!r}"
        assert not english_words(checks.check(key, ex.reference()).message)


def test_string_table_sections_complete():
    table = i18n.table()
    for section in ("ch01", "ch02", "ch03"):
        ids = [k for k in table if k.startswith(section + ".")]
        assert len(ids) > 10
        for msg_id in ids:
            entry = table[msg_id]
            assert entry.get("en") and entry.get("zh"), msg_id
            assert i18n.fields(entry["en"]) == i18n.fields(entry["zh"]), msg_id


def test_padding_table_bad_input():
    with pytest.raises(ValueError, match="padding_experiment"):
        ch03_walkthrough.padding_table({"nonsense": {}})


def test_heads_explorer_steps_carry_each_head_count():
    fig = ch01_intuition.heads_figure()
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == ["1", "2", "3"]
    for h, step in enumerate(steps, start=1):
        zs = step.args[0]["z"]
        drawn = [z for z in zs if any(v is not None for row in z for v in row)]
        assert len(drawn) == h
        np.testing.assert_allclose(np.array(drawn[0], dtype=float),
                                   orders_example.heads_data(h)["z"][0], atol=1e-4)


def test_heads_explorer_keys_upright_in_a_wider_first_panel(chinese):
    """Issue 32: with the short (Chinese) query labels, the first panel is wider and carries
    the keys' labels, upright one character a line; the other panels leave them to the hover.
    With the glossed English labels the panels stay equal, every panel labelled."""
    from book.face.plotting import tidy

    layout = tidy(ch01_intuition.heads_figure().to_dict())["layout"]
    first, second = layout["xaxis"], layout["xaxis2"]
    assert first["domain"][1] - first["domain"][0] > 2 * (second["domain"][1]
                                                          - second["domain"][0])
    assert first["tickangle"] == 0 and "牛<br>肉<br>面" in first["ticktext"]
    assert second["showticklabels"] is False
    i18n.set_language("en")
    layout = ch01_intuition.heads_figure().to_dict()["layout"]
    widths = [layout[k]["domain"][1] - layout[k]["domain"][0]
              for k in ("xaxis", "xaxis2", "xaxis3")]
    assert max(widths) - min(widths) < 1e-9 and layout["xaxis2"]["showticklabels"] is True


# --- figures as a screen reader meets them (issue 47) ---------------------------------------

@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_figure_is_described(language):
    i18n.set_language(language)
    try:
        figures = _figures() + [ch01_intuition.heads_live().figure,
                                ch03_walkthrough.walkthrough_live().figure,
                                ch03_walkthrough.dataflow_diagram()]
        missing = [fig.layout.title.text for fig in figures if described(fig.to_dict()) is None]
    finally:
        i18n.set_language("en")
    assert not missing


def test_chapter_1_captions_quote_the_drawn_numbers():
    i18n.set_language("en")
    weights = orders_example.head_weights(list(orders_example.RELATIONS))
    fig = ch01_intuition.one_head_figure(weights)
    z = np.asarray(fig.data[0].z, dtype=float)
    assert f"The darkest cell, {z.max():.2f}," in described(fig.to_dict())[1]
    fig = ch01_intuition.menu_figure(orders_example.menu_match())
    drawn = list(fig.data[0].x)
    caption = described(fig.to_dict())[1]
    assert f"takes {max(drawn):.2f} of the weight" in caption
    assert f"still gets {min(drawn):.2f}" in caption
    # the heads explorer: 香菜's row at one head and at the most, as its steps draw them
    fig = ch01_intuition.heads_figure()
    coriander, no = 4, 3
    one = fig.layout.sliders[0].steps[0].args[0]["z"][0][coriander][no]
    caption = described(fig.to_dict())[1]
    assert f"must split its row: {one:.2f} to" in caption
    most = max(step_z[coriander][no] for step_z in fig.layout.sliders[0].steps[-1].args[0]["z"]
               if step_z[coriander][no] is not None)
    assert f"the best head for each gives {most:.2f}" in caption and most > one


# --- issue 49: chapter 1's dataflow draws W_Q, W_K and W_V as matrices -----------------------

@pytest.mark.parametrize("language", ["en", "zh"])
def test_chapter_1_dataflow_draws_each_heads_weight_matrices(language):
    """The page's diagram cell (dg01b) draws the symbolic dataflow: under the input, each drawn
    head (1 and h) has W_Q, W_K and W_V as boxes named after them, with their shape,
    d_model × d_k, written under them; the alt and the caption name them."""
    import json
    from pathlib import Path

    from book.face import diagrams

    cells = json.loads(Path("chapters/01_intuition.ipynb").read_text(encoding="utf-8"))["cells"]
    (cell,) = [c for c in cells if c.get("id") == "dg01b"]
    assert "diagrams.multihead_dataflow()" in "".join(cell["source"])
    i18n.set_language(language)
    try:
        fig = diagrams.multihead_dataflow()
        shape = i18n.tr("common.dg_each", shape=i18n.tr("common.dg_shape2", a="d_model", b="d_k"))
        names = diagrams.weight_names("1") + diagrams.weight_names("h")
    finally:
        i18n.set_language("en")
    drawn = {s.name for s in fig.layout.shapes}
    labels = [a.text for a in fig.layout.annotations]
    assert all(name in drawn and name in labels for name in names)
    assert labels.count(shape) == 2
    alt, caption = described(fig.to_dict())
    assert all(w in alt and w in caption for w in ("W_Q", "W_K", "W_V"))
    assert "d_model × d_k" in caption


# --- issue 48: every Chinese token on an English axis carries its gloss ---

def test_every_chinese_token_on_an_english_axis_is_glossed():
    """The maps' queries carry their gloss in the tick label, the upright keys in the hover
    (gloss_check: book.toy.orders.WORDS' gloss of each, in every state of the controls); the
    Chinese edition reads the tokens natively and keeps its hover as it was."""
    from gloss_check import unglossed

    one = orders_example.head_weights(list(orders_example.RELATIONS))
    figures = [ch01_intuition.one_head_figure(one), ch01_intuition.heads_figure(),
               ch01_intuition.heads_live().figure,
               ch01_intuition.menu_figure(orders_example.menu_match())]
    for fig in figures:
        assert not unglossed(fig), unglossed(fig)
    assert "(coriander)" in str(figures[1].data[0].customdata)
    i18n.set_language("zh")
    try:
        fig = ch01_intuition.heads_figure()
    finally:
        i18n.set_language("en")
    assert fig.data[0].customdata is None and "%{x}" in fig.data[0].hovertemplate


def test_printed_glosses_and_glued_words_follow_the_edition():
    """The lesson cells print plain Python (issue 49): what differs between the editions comes
    from the chapter module. The English page prints each token with its gloss, the Chinese
    page the tokens alone; the glued verdict on X Xᵀ is a phrase of the edition's language."""
    try:
        i18n.set_language("en")
        glosses = ch01_intuition.token_glosses()
        assert len(glosses) == len(orders_example.TOKENS)
        assert glosses[orders_example.TOKENS.index("香菜")] == "coriander"
        assert all(glosses[i] for i, t in enumerate(orders_example.TOKENS) if t != "，")
        assert ch01_intuition.symmetric_or_not(True).startswith("is symmetric")
        assert ch01_intuition.symmetric_or_not(False) == "is not symmetric"
        i18n.set_language("zh")
        assert ch01_intuition.token_glosses() == [""] * len(orders_example.TOKENS)
        assert ch01_intuition.symmetric_or_not(True) != ch01_intuition.symmetric_or_not(False)
        assert not english_words(ch01_intuition.symmetric_or_not(True))
    finally:
        i18n.set_language("en")


# --- exercise ch1.qkv_order: whose key the ingredient's query matches, whose value it copies ---

def _qkv_solution_cell() -> str:
    import json
    from pathlib import Path
    nb = json.loads((Path(__file__).parents[2] / "chapters" / "01_intuition.ipynb")
                    .read_text("utf-8"))
    cell = next(c for c in nb["cells"] if c["id"] == "c027c")
    assert "hide-cell" in cell["metadata"]["tags"]
    return "".join(cell["source"])


def test_qkv_order_reference_follows_the_order_grammar():
    """The order is built from the toy vocabulary and new to the page; the reference is the
    modifier of the ingredient's clause, whose label book.toy.orders gives the ingredient."""
    from book.toy import orders
    order = orders.Order.from_text(ch01_intuition.QKV_ORDER)
    assert order.tokens != tuple(orders_example.TOKENS)
    key, value = checks.reference("ch1.qkv_order")
    assert key == value and orders.category(key) == "modifier"
    ingredient = order.categories.index("ingredient")
    assert order.labels[ingredient] == orders.WORDS[key][2]
    assert key not in orders_example.TOKENS                # a modifier the page has not used
    assert checks.check("ch1.qkv_order", [key, value]).ok


@pytest.mark.parametrize(("mistake", "en", "zh"), [
    (0, "its own key", "自己的键"),
    (1, "is the dish", "是菜"),
    (2, "the value is not", "值不对"),
    (3, "list of two tokens", "两个词元的列表"),
    (4, "list of two tokens", "两个词元的列表"),
])
def test_qkv_order_each_mistake_gets_its_own_hint(mistake, en, zh):
    answer = checks.registered()["ch1.qkv_order"].mistakes()[mistake]
    try:
        for language, words in (("en", en), ("zh", zh)):
            i18n.set_language(language)
            result = checks.check("ch1.qkv_order", answer)
            assert not result.ok and words in result.message, result.message
    finally:
        i18n.set_language("en")


def test_qkv_order_other_answers_get_the_general_hint():
    result = checks.check("ch1.qkv_order", ["两盘", "饺子"])   # the cell's example
    assert not result.ok and "decided by one token of its clause" in result.message
    assert "少放" not in result.message                      # the hints keep the answer back
    for mistake in checks.registered()["ch1.qkv_order"].mistakes():
        assert "少放" not in checks.check("ch1.qkv_order", mistake).message


def test_qkv_order_is_printed_with_glosses_in_english_only():
    try:
        i18n.set_language("en")
        assert "醋 (vinegar)" in ch01_intuition.qkv_order_text()
        assert "少放 (go easy on)" in ch01_intuition.qkv_order_text()
        i18n.set_language("zh")
        assert ch01_intuition.qkv_order_text() == "两盘 饺子 ， 醋 少放"
    finally:
        i18n.set_language("en")


def test_qkv_order_notebook_solution_passes():
    scope = {"checks": checks, "ch01_intuition": ch01_intuition}
    exec(_qkv_solution_cell(), scope)
    assert scope["modifier"] == checks.reference("ch1.qkv_order")[0]
    assert checks.check("ch1.qkv_order", [scope["modifier"]] * 2).ok
