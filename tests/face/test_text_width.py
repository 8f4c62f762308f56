"""One rule for how wide text is drawn: book.face.plotting.text_width (a CJK character takes two
columns), used by plotting.wrap, chapter 8's captions and menu labels and chapter 11's label
margins."""

from __future__ import annotations

import re
import tomllib
import unicodedata

import pytest

from book.chapters import ch08_seeing_attention, ch11_modern
from book.face import plotting
from book.face.plotting import is_wide, text_width, wrap
from book.kit import i18n


def test_counts_cjk_as_two_columns():
    assert text_width("") == 0
    assert text_width("head 3") == 6
    assert text_width("第 3 层") == 7
    assert text_width("一碗牛肉面，不要香菜。") == 22       # fullwidth punctuation too
    assert text_width("（ｆｕｌｌ）") == 12                  # fullwidth Latin
    assert text_width("“quoted” · → …") == 14             # ambiguous-width marks: one column
    assert text_width("ﾊﾝｶｸ") == 4                        # halfwidth katakana: one column
    assert text_width("한국어") == 6 and text_width("✅") == 2  # wide outside the CJK block too
    assert is_wide("香") and not is_wide("a") and not is_wide(" ")


def test_refuses_what_is_not_text():
    with pytest.raises(TypeError, match="text must be a str"):
        text_width(None)
    with pytest.raises(TypeError, match="text must be a str"):
        text_width(["一"])


def test_the_old_rules_agree_with_it_on_every_string_of_the_book():
    """The three rules it replaced (east_asian_width in WF; the CJK code-point ranges of
    plotting; ord > 0x2E80 in chapter 11) give the same width for every string the figures
    draw, so no figure changed."""
    ranges = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]")
    texts = [t for path in sorted(i18n.STRINGS_DIR.glob("*.toml"))
             for entry in tomllib.loads(path.read_text(encoding="utf-8")).values()
             for t in entry.values()]
    assert len(texts) > 500
    for t in texts:
        width = text_width(t)
        assert width == sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in t)
        assert width == sum(2 if ranges.match(c) else 1 for c in t), t
        assert width == sum(2 if ord(c) > 0x2E80 else 1 for c in t), t


def test_wrap_measures_with_it():
    text = "一碗牛肉面，不要香菜，多加辣，再来两份招牌炒饭"
    for width in (10, 14, 20):
        lines = wrap(text, width).split("<br>")
        assert "".join(lines) == text
        assert all(text_width(line) <= width + 2 for line in lines)   # + a trailing comma
    assert wrap("한국어 텍스트 한국어", 8).count("<br>") >= 1      # hangul breaks like CJK now


def test_chapter_8_and_11_measure_with_it(monkeypatch):
    calls = []

    def counting(text):
        calls.append(text)
        return plotting.text_width(text)

    monkeypatch.setattr(ch08_seeing_attention, "text_width", counting)
    monkeypatch.setattr(ch11_modern, "text_width", counting)
    assert ch08_seeing_attention._menu_name("一" * 30).endswith("…")
    assert text_width(ch08_seeing_attention._menu_name("一" * 30)) <= 22
    assert ch08_seeing_attention._wrap("一二 三四 五六", 8) == "一二<br>三四<br>五六"
    assert ch11_modern._label_margin(["无位置编码", "RoPE"]) == int(16 + 6.5 * 10)
    assert "无位置编码" in calls and "一" * 30 in calls   # (_wrap measures in plotting.wrap)
