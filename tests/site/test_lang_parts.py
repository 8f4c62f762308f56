"""book/site/lang_parts.py: the language of parts marked in the written pages (WCAG 3.1.2)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from book.site import lang_parts
from book.site.lang_parts import chinese_runs, english_runs, is_english, mark

ZH = '<span lang="zh-Hans">'
EN = '<span lang="en">'


# ---- English pages: Chinese runs ------------------------------------------------------------

def test_a_chinese_run_in_english_prose_gets_a_span_with_its_punctuation():
    got = mark("<p>Our order is 一碗牛肉面，不要香菜，多加辣。 Read it.</p>", "en")
    assert got == f"<p>Our order is {ZH}一碗牛肉面，不要香菜，多加辣。</span> Read it.</p>"


def test_spaces_between_chinese_tokens_stay_inside_one_run():
    assert chinese_runs("The sentence 我 爱 你 (I love you)") == [(13, 18)]
    got = mark("<p>The tokens 我, 爱, 你 here</p>", "en")
    assert got == f"<p>The tokens {ZH}我</span>, {ZH}爱</span>, {ZH}你</span> here</p>"


def test_an_element_that_holds_only_chinese_gets_the_lang_itself():
    got = mark("<p>Its row <em>不要</em> puts <strong> 香菜 </strong> first</p>", "en")
    assert got == ('<p>Its row <em lang="zh-Hans">不要</em> puts '
                   '<strong lang="zh-Hans"> 香菜 </strong> first</p>')


def test_options_and_titles_are_marked_by_their_own_lang_never_a_span():
    got = mark("<select><option>一碗牛肉面…</option><option>mixed 两碗 text</option></select>",
               "en")
    assert got == ('<select><option lang="zh-Hans">一碗牛肉面…</option>'
                   "<option>mixed 两碗 text</option></select>")


def test_chinese_inside_code_is_marked_on_english_pages():
    got = mark('<pre><span class="s2">&quot;我要&quot;</span></pre>', "en")
    assert got == f'<pre><span class="s2">&quot;{ZH}我要</span>&quot;</span></pre>'


def test_what_is_never_read_or_already_has_a_lang_is_left_alone():
    page = ('<head><title>x</title><script>var s = "我";</script><style>p::after{content:"我"}'
            '</style></head><body><a lang="zh-CN" href="zh/">阅读中文版</a>'
            '<div aria-hidden="true"><span>我</span></div>'
            '<span class="math notranslate">\\(\\text{我}\\)</span>'
            '<svg><text>我</text></svg></body>')
    assert mark(page, "en") == page


def test_the_pages_own_html_lang_does_not_count_as_a_part():
    got = mark('<html lang="en"><body><p>say 我</p></body></html>', "en")
    assert got == f'<html lang="en"><body><p>say {ZH}我</span></p></body></html>'


def test_character_references_are_kept_as_written():
    got = mark("<p>a &amp; &#25105;&#29233; b &lt;c&gt;</p>", "en")
    assert got == f"<p>a &amp; {ZH}&#25105;&#29233;</span> b &lt;c&gt;</p>"


# ---- Chinese pages: English sentences and phrases -------------------------------------------

def test_is_english_needs_two_latin_words_and_no_han():
    assert is_english("one bowl of beef noodles")
    assert is_english("：masked_fill_ only supports boolean masks")
    assert not is_english("softmax")
    assert not is_english("d_k = 64")
    assert not is_english("这是 two words")


def test_an_english_sentence_on_a_chinese_page_gets_lang_en():
    got = mark("<p>The animal didn’t cross the street.</p>", "zh")
    assert got == '<p lang="en">The animal didn’t cross the street.</p>'
    got = mark("<td>错误：<em>x</em>：masked_fill_ only supports boolean masks</td>", "zh")
    assert got == (f"<td>错误：<em>x</em>：{EN}masked_fill_ only supports boolean masks</span>"
                   "</td>")


def test_a_long_english_phrase_inside_chinese_is_marked_a_single_term_is_not():
    assert english_runs("见论文 Attention Is All You Need。") == [(4, 29)]
    assert english_runs("d_k 的 softmax 把 token 的分数") == []
    got = mark("<p>见论文 Attention Is All You Need。softmax 不变</p>", "zh")
    assert got == f"<p>见论文 {EN}Attention Is All You Need</span>。softmax 不变</p>"


def test_code_and_math_stay_unmarked_on_chinese_pages():
    page = ('<p>用 <code class="literal">masked fill here</code> 和 <kbd>Ctrl K</kbd></p>'
            "<pre>residual = X + output</pre>")
    assert mark(page, "zh") == page


# ---- the rewrite itself ---------------------------------------------------------------------

@pytest.mark.parametrize("edition", ["en", "zh"])
def test_a_page_without_other_language_text_is_unchanged_byte_for_byte(edition):
    page = ("<!DOCTYPE html>\n<html lang='x'><!-- 注释 comment here --><body class=a>"
            "<img alt=\"two words\" src=x><br/><p data-x='a > b'>x y</p></body></html>")
    if edition == "zh":
        page = page.replace("x y", "一句中文")
    else:
        page = page.replace("x y", "one English sentence")
    assert mark(page, edition) == page


@pytest.mark.parametrize("edition,text", [("en", "a 一碗牛肉面 b <em>不要</em>"),
                                          ("zh", "中文 Attention Is All You Need 中文 "
                                                 "<td>one two three</td>")])
def test_marking_twice_is_marking_once(edition, text):
    once = mark(f"<p>{text}</p>", edition)
    assert once != f"<p>{text}</p>"
    assert mark(once, edition) == once


def test_text_beside_a_tag_it_could_not_read_is_left_alone():
    page = '<p>我 <a href="x>broken 我</p>'
    assert mark(page, "en") == page


def test_an_unknown_edition_is_refused():
    with pytest.raises(ValueError, match="unknown edition"):
        mark("<p>x</p>", "fr")


def test_mark_build_rewrites_every_page_but_the_static_files(tmp_path):
    (tmp_path / "chapters").mkdir()
    (tmp_path / "_static").mkdir()
    (tmp_path / "chapters" / "a.html").write_text("<p>say 我</p>", encoding="utf-8")
    (tmp_path / "_static" / "b.html").write_text("<p>say 我</p>", encoding="utf-8")
    app = SimpleNamespace(outdir=str(tmp_path), builder=SimpleNamespace(format="html"),
                          config=SimpleNamespace(language="en"))
    lang_parts.mark_build(app, None)
    assert (tmp_path / "chapters" / "a.html").read_text(encoding="utf-8") == \
        f"<p>say {ZH}我</span></p>"
    assert (tmp_path / "_static" / "b.html").read_text(encoding="utf-8") == "<p>say 我</p>"
    app.config.language = "zh_CN"   # a Chinese build leaves Chinese as it is
    lang_parts.mark_build(app, RuntimeError("failed build"))
    assert "我</span>" in (tmp_path / "chapters" / "a.html").read_text(encoding="utf-8")
