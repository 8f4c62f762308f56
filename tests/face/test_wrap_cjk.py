"""Title wrapping in both languages (book.face.plotting.wrap): lines that fit the figure at the
narrowest supported width (title_width), Chinese breaks between words and by 避头尾, and no
synthetic italic on Chinese (upright)."""

from __future__ import annotations

import re
import tomllib

import pytest
from figure_text import split_words

from book.face import plotting
from book.face.plotting import NO_LINE_END, NO_LINE_START, text_width, title_width, upright, wrap
from book.kit import i18n
from book.kit import text as kit_text

jieba = pytest.importorskip("jieba")   # the word list the wrapping and this test use (dev)


def _chinese_strings() -> list[str]:
    texts = []
    for path in sorted(i18n.STRINGS_DIR.glob("*.toml")):
        for key, entry in tomllib.loads(path.read_text(encoding="utf-8")).items():
            if key.endswith(("_alt", "_caption")):
                continue  # a figure's text alternative and caption: HTML, the browser wraps it
            zh = entry.get("zh")
            if isinstance(zh, str) and text_width(zh) > 24 and "<span" not in zh:
                texts.append(zh)
    return texts


TEXTS = _chinese_strings()


def test_the_titles_that_broke_a_word_now_break_between_words():
    # the examples: 并非学/习所得, 增/长, and a line ending on an opening bracket
    title = "1 个头处理“一碗牛肉面，不要香菜，多加辣”（示意权重：手工设定，并非学习所得）"
    for width in range(20, 60, 2):
        lines = wrap(title, width).split("<br>")
        assert "".join(lines).replace(" ", "") == title.replace(" ", "")
        assert not split_words(lines), (width, lines)
        assert not any(line.endswith("（") or line.endswith("“") for line in lines), lines
        assert not any(line[0] in NO_LINE_START for line in lines), lines
    assert wrap("点积的方差随 d_k 增长", 14) == "点积的方差随<br>d_k 增长"
    assert "学<br>习" not in wrap("示意权重：手工设定，并非学习所得", 24)
    assert wrap("示意权重：手工设定，并非学习所得", 24) == "示意权重：手工设定，<br>并非学习所得"


@pytest.mark.parametrize("width", [16, 28, 35, 48])
def test_every_chinese_string_of_the_book_keeps_the_rules(width):
    """Every Chinese string of the tables, wrapped at widths from a panel's to a 13 px title's:
    the text is kept, each line fits (a closing mark may hang: 2 columns), no line starts with
    closing punctuation or ends with an opening bracket, and no break splits a word."""
    assert len(TEXTS) > 300
    faults = []
    for text in TEXTS:
        lines = wrap(text, width).split("<br>")
        assert re.sub(r"\s", "", "".join(lines)) == re.sub(r"\s|<br>", "", text)
        for k, line in enumerate(lines):
            visible = re.sub(r"<[^>]+>", "", line)
            # a bracket holds on to what it opens and closes: （js_divergence）， is one unit
            units = re.findall(r"[（“「《]?[^\s\u3000-\u9fff\uff00-\uffef]+[）”」》，。：；]*",
                               visible)
            unit = max((text_width(w) for w in units), default=0)
            if text_width(visible) > width + 2 and unit <= width:
                faults.append(f"too wide: {line!r}")
            if visible[:1] in NO_LINE_START and k > 0:   # (a fragment may start so)
                faults.append(f"starts with {visible[0]}: {line!r}")
            if visible[-1:] in NO_LINE_END:
                faults.append(f"ends with {visible[-1]}: {line!r}")
        faults += [f"word split {w} in {text!r}" for w in split_words(lines)]
    assert not faults, f"{len(faults)} fault(s) at width {width}:\n" + "\n".join(faults[:15])


def test_english_titles_break_at_spaces_and_balance():
    text = "The variance of the dot product grows with d_k, so the softmax saturates"
    lines = wrap(text, 35).split("<br>")
    assert " ".join(lines) == text and all(len(line) <= 35 for line in lines)
    assert wrap("aaaa bbbb cccc", 9) == "aaaa bbbb<br>cccc"
    assert wrap("<b>correct</b>: padding mask with True = real token", 20) == \
        "<b>correct</b>: padding<br>mask with True =<br>real token"
    assert wrap("x<br>y z", 8) == "x<br>y z"                      # a written break is kept


def test_without_the_word_list_it_prefers_punctuation_and_particles(monkeypatch):
    monkeypatch.setattr(kit_text, "_SEGMENTER", [None])
    assert wrap("示意权重：手工设定，并非学习所得", 24) == "示意权重：手工设定，<br>并非学习所得"
    lines = wrap("一个查询平均看到的键的个数随窗口增长", 20).split("<br>")
    assert lines[0].endswith("的"), lines      # after a particle, not inside a word
    assert not any(line[0] in NO_LINE_START for line in
                   wrap("所有键都被屏蔽；返回全零，这一行是均匀分布", 12).split("<br>"))


def test_a_word_wider_than_a_line_is_cut_only_then():
    assert wrap("示意权重示意权重示意权重", 8).split("<br>") == ["示意权重", "示意权重", "示意权重"]
    assert wrap("<b>长长长长长长长长长长</b>", 8).count("<br>") >= 2


def test_title_width_is_the_phone_figure_in_columns():
    """358 px (a 390 px phone's figure) from the title's start, 8 px kept at the edge, a
    column being 0.55 font sizes: 35 columns for plotly's default title (17 px at x = 0.05),
    48 for a 13 px title at the left edge; a Chinese line of that width fits in 1 em glyphs."""
    assert title_width() == 35 and title_width(13, 0) == 48
    assert title_width(13, 0.3, "center") < title_width(13, 0)
    for size, x in ((17, 0.05), (13, 0), (16, 0.05)):
        columns = title_width(size, x)
        assert columns / 2 * size <= plotting.PHONE_FIGURE_PX * (1 - x) - plotting.EDGE_PX
    with pytest.raises(TypeError, match="size must be a number"):
        title_width("17")
    with pytest.raises(ValueError, match="positive"):
        title_width(0)


def test_tidy_wraps_a_title_at_its_own_width():
    fig = {"layout": {"title": {"text": "注意力权重" * 12}}}
    lines = plotting.tidy(fig)["layout"]["title"]["text"].split("<br>")
    assert len(lines) > 1 and all(text_width(line) <= 35 for line in lines)
    fig = {"layout": {"title": {"text": "注意力权重" * 12, "font": {"size": 13}, "x": 0}}}
    lines = plotting.tidy(fig)["layout"]["title"]["text"].split("<br>")
    assert max(text_width(line) for line in lines) > 35 and \
        all(text_width(line) <= 48 for line in lines)


def test_no_synthetic_italic_on_chinese():
    assert upright("<i>模型：苹果</i> and <i>the model</i>") == "模型：苹果 and <i>the model</i>"
    assert upright('<span style="font-style:italic">模型</span>') == '<span style="">模型</span>'
    assert upright('<span style="font-style:italic">model</span>') == \
        '<span style="font-style:italic">model</span>'
    assert plotting.italic("模型") == "模型" and plotting.italic("model") == "<i>model</i>"
    fig = {"layout": {"title": {"text": "<i>中文</i>", "font": {"style": "italic"}},
                      "annotations": [{"text": "<i>注释</i>", "font": {"style": "italic"}}]}}
    out = plotting.tidy(fig)["layout"]
    assert out["title"]["text"] == "中文" and out["title"]["font"]["style"] == "normal"
    assert out["annotations"][0]["text"] == "注释"
    assert out["annotations"][0]["font"]["style"] == "normal"
    with pytest.raises(TypeError):
        upright(None)
