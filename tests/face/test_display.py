"""book.face.display: the renderer emits both faces of a figure, deterministically; glue and
source."""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio
import pytest

import book
from book.face import display
from book.kit import codetext


def render(fig):
    return pio.renderers["book"].to_mimebundle(fig.to_dict())


def test_renderer_emits_html_without_plotlyjs_and_json():
    book.setup()
    bundle = render(go.Figure(go.Bar(y=[1, 2])))
    assert set(bundle) == {"text/html", "application/vnd.plotly.v1+json"}
    html = bundle["text/html"]
    assert "Plotly.newPlot" in html and "cdn" not in html.lower()
    assert len(html) < 20_000  # the library itself is not inlined
    assert pio.renderers.default == "book"


def test_mimetype_bundle_is_never_responsive_and_the_html_twin_is():
    """JupyterLab, Notebook 7 and VS Code render the plotly mimetype: a responsive config there
    collapses the figure to 0 px at its first slider step. The book's page gives the html
    twin's container a size, so it stays responsive (reflow down to 390 px)."""
    book.setup()
    for _ in range(2):  # plotly's to_html must not have written into the shared config
        bundle = render(go.Figure(go.Bar(y=[1, 2])))
        assert "responsive" not in bundle["application/vnd.plotly.v1+json"]["config"]
        assert '"responsive": true' in bundle["text/html"]
    assert "responsive" not in display.PLOTLY_CONFIG


def test_renderer_output_repeats_after_setup():
    book.setup()
    first = render(go.Figure(go.Bar(y=[1, 2])))["text/html"]
    book.setup()
    assert render(go.Figure(go.Bar(y=[1, 2])))["text/html"] == first


def test_setup_seeds_everything():
    import numpy as np
    import torch

    book.setup(3)
    a = (np.random.rand(), torch.rand(1).item())
    book.setup(3)
    assert (np.random.rand(), torch.rand(1).item()) == a
    with pytest.raises(ValueError):
        book.setup(-1)


def test_glue_returns_plain_values_and_checks_names():
    assert display.glue("x_1", 2.5) is None  # a cell ending in glue shows nothing
    with pytest.raises(ValueError, match="identifier"):
        display.glue("not a name", 1)


def test_show_source(capsys):
    book.show_source(display.glue)
    with pytest.raises(TypeError, match="defined in a file"):
        book.show_source(3)


def test_class_listing_shows_only_the_named_methods():
    from book.ideas.mha import MultiHeadSelfAttention

    text = codetext._class_excerpt(MultiHeadSelfAttention, ["__init__", "forward"])
    assert text.startswith("class MultiHeadSelfAttention(nn.Module):")
    assert "def forward(" in text and "def __init__(" in text
    assert "def check_inputs(" not in text and "check_inputs" in text  # named, not printed
    assert len(text.splitlines()) <= 60  # the chapter-4 listing fits on one screen
    assert max(len(line) for line in text.splitlines()) <= 88  # no sideways scrolling
    with pytest.raises(ValueError, match="defines no"):
        codetext._class_excerpt(MultiHeadSelfAttention, ["backward"])
    with pytest.raises(TypeError, match="list of method names"):
        codetext._class_excerpt(MultiHeadSelfAttention, "forward")
    with pytest.raises(TypeError, match="works on a class"):
        codetext._class_excerpt(display.glue, ["x"])


def test_glue_all_and_table():
    assert display.glue_all(a_1=1.0, b_2=2) is None
    assert display.glue_all({"c_3": 3}) is None
    with pytest.raises(TypeError, match="mapping"):
        display.glue_all([("a", 1)])
    with pytest.raises(ValueError, match="nothing to glue"):
        display.glue_all()
    md = display.table(["name", "value"], [("pi", 3.14159), ("e", 2.71828)], ["", ".2f"])
    assert md.data.splitlines() == ["| name | value |", "|---|---|", "| pi | 3.14 |",
                                    "| e | 2.72 |"]
    with pytest.raises(ValueError, match="row 0 has 1 cells"):
        display.table(["a", "b"], [(1,)])
    with pytest.raises(ValueError, match="one format spec per column"):
        display.table(["a", "b"], [(1, 2)], [".1f"])


def test_tidy_wraps_titles_and_lifts_tiny_fonts():
    from plotly.subplots import make_subplots

    from book.face.plotting import TITLE_WIDTH, tidy, wrap

    assert wrap("aaaa bbbb cccc", 9) == "aaaa bbbb<br>cccc" and wrap("x<br>y z", 8) == "x<br>y z"
    with pytest.raises(TypeError):
        wrap(3)
    fig = make_subplots(rows=1, cols=2, subplot_titles=["a long panel title " * 2, "b"])
    fig.add_trace(go.Heatmap(z=[[1]], texttemplate="%{z}"))
    fig.update_layout(title="word " * 20, xaxis={"tickfont": {"size": 8}},
                      sliders=[{"steps": [{"method": "update", "args": [
                          {}, {"title.text": "step " * 20}]}]}])
    out = tidy(fig.to_dict())
    lines = out["layout"]["title"]["text"].split("<br>")
    assert len(lines) > 1 and all(len(line) <= TITLE_WIDTH for line in lines)
    assert all(len(line) <= TITLE_WIDTH // 2
               for line in out["layout"]["annotations"][0]["text"].split("<br>"))
    assert out["layout"]["xaxis"]["tickfont"]["size"] == 10
    assert out["data"][0]["textfont"]["size"] == 11
    step_title = out["layout"]["sliders"][0]["steps"][0]["args"][1]["title.text"]
    assert "<br>" in step_title
    with pytest.raises(TypeError, match="figure dict"):
        tidy(fig)


def test_tidy_reserves_the_room_of_an_automargin_title():
    """plotly.js misplaces the plot when an automargin title grows the top margin (the cells
    drawn above their axes): tidy turns that automargin off, reserves the top margin for the
    tallest title of every slider step, and anchors each step's title at the figure's top."""
    import math

    from book.face.plotting import TITLE_TOP, tidy

    steps = [{"method": "update", "args": [{}, {"title.text": "a<br>b<br>c<br>d"}]},
             {"method": "update", "args": [{}, {"title.text": "one line"}]},
             {"method": "relayout", "args": [{"title": "plain"}]}]
    fig = go.Figure(go.Heatmap(z=[[1, 2], [3, 4]]))
    fig.update_layout(title={"text": "x<br>y", "font": {"size": 13}, "yref": "paper",
                             "automargin": True, "pad": {"b": 16}},
                      margin={"t": 30}, sliders=[{"steps": steps}])
    layout = tidy(fig.to_dict())["layout"]
    title = layout["title"]
    assert title["automargin"] is False
    assert (title["yref"], title["y"], title["yanchor"]) == ("container", 1, "top")
    # four lines of 1.3 font sizes, the gap asked for below, the space above
    assert layout["margin"]["t"] == math.ceil(TITLE_TOP + 4 * 1.3 * 13 + 16)
    # the first baseline one font size under TITLE_TOP whatever the lines (plotly shifts a
    # one-line title anchored at its top by 0.7 font sizes, one of several lines not)
    assert title["pad"] == {"b": 16, "t": TITLE_TOP + 13}
    args = [s["args"][-1] for s in layout["sliders"][0]["steps"]]
    assert args[0]["title.pad.t"] == TITLE_TOP + 13
    assert args[1]["title.pad.t"] == round(TITLE_TOP + 0.3 * 13, 1)
    assert args[2] == {"title.text": "plain", "title.pad.t": round(TITLE_TOP + 0.3 * 13, 1)}
    # a margin already big enough stays; a title without automargin is left alone
    fig.update_layout(margin={"t": 200})
    assert tidy(fig.to_dict())["layout"]["margin"]["t"] == 200
    fig.update_layout(title={"automargin": False})
    plain = tidy(fig.to_dict())["layout"]
    assert "yanchor" not in plain["title"] and "title.pad.t" not in \
        plain["sliders"][0]["steps"][0]["args"][1]


def test_wrap_breaks_chinese_between_characters():
    """Chinese has no spaces: lines break between characters, each counting as two Latin
    letters, never inside a Latin word and never before closing punctuation."""
    from book.face.plotting import wrap

    text = ("翻转：把 True = 填充（nn.MultiheadAttention 的约定）交给了一个"
            "把 True 理解为可以关注的层")
    lines = wrap(text, 46).split("<br>")
    assert len(lines) > 1 and "".join(lines).replace(" ", "") == text.replace(" ", "")
    for line in lines:
        assert sum(2 if ord(c) > 0x2e80 else 1 for c in line) <= 46 + 2
        assert line[0] not in "，。、：；）"
    assert "nn.MultiheadAttention" in wrap(text, 46)      # a code name stays whole
    assert wrap("第 0 层，训练后") == "第 0 层，训练后"         # short: unchanged
    assert wrap("一二三四五，六七八", 10) == "一二三四五，<br>六七八"  # the comma stays on its line
    # no character alone on the last line: the lines are balanced, and break between words
    assert wrap("示意权重：手工设定，并非学习所得", 30) == "示意权重：手工设定，<br>并非学习所得"
    title = "一个查询平均看到 24 个键中的 8.2 个"
    assert wrap(title, 34) == "一个查询平均看到 24 个键中的<br>8.2 个"
