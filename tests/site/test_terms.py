"""One Chinese word per concept: every catalogue and string table is held to locale/terms.toml
(book/site/terms.py), and the table itself is well formed."""

from __future__ import annotations

import re

import pytest

from book.site import terms


def test_the_table_is_well_formed():
    rows = terms.terms()
    assert len(rows) >= 20, "the terminology table lost its rows?"
    for term in rows:
        assert term.zh and term.en, term.id
        assert not terms.violations(term.zh), f"{term.id}: its own form is rejected"
        if term.first_use:
            assert term.zh in term.first_use, f"{term.id}: first_use must contain {term.zh!r}"
    errors = terms.table()["errors"]
    assert len(errors) >= 8, "the glossary gives the key words of PyTorch's common errors"
    assert all(re.search("[\u4e00-\u9fff]", row["zh"]) for row in errors.values())


def test_every_chinese_text_uses_the_table():
    """Each rejected form in a msgstr (locale/zh_CN/**/*.po) or a zh string (book/strings) fails,
    named with its file and entry."""
    texts = list(terms.chinese_texts())
    assert len(texts) > 1000, f"only {len(texts)} Chinese texts found: wrong root?"
    bad = [f"{where}: {problem}" for where, text in texts for problem in terms.violations(text)]
    assert not bad, f"{len(bad)} rejected form(s):\n" + "\n".join(bad[:30])


@pytest.mark.parametrize(("text", "concept"), [
    ("第二个序列有 3 个真实 token 和 2 个填充位置", "token"),
    ("用 $-\\infty$ 填充，一批中第二个序列", "fill"),
    ("有限值填充是许多库的做法", "fill"),
    ("同一个掩码，用 -1e9 填充：每一行都是均匀分布", "fill"),
    ("第 {head} 个头", "head_label"),
    ("批归一化把批次里所有句子的统计量汇总在一起", "batch_norm"),
    ("交给 PyTorch 的融合算子", "fused_kernel"),
    ("空洞注意力跳过了紧邻的词", "dilated"),
    ("而一袋词分不出是哪一个", "bag_of_words"),
    ("分带版本比完整矩阵少 {eval}`book.glued(\"r:.1f\")` 倍", "times_fewer"),
    ("共有 6.4 十亿个权重", "large_counts"),
    ("参数量 {eval}`book.glued(\"n:.1f\")` 百万", "large_counts"),
])
def test_a_rejected_form_is_caught(text, concept):
    assert any(v.startswith(concept + ":") for v in terms.violations(text)), text


@pytest.mark.parametrize("text", [
    "键 {token}",                                  # a str.format placeholder
    "编写 `modifier_pairs(tokens)`：对一份订单",      # code
    "**键值缓存**（KV cache）保存每一层的键和值",     # the allowed first-use gloss
    "膨胀注意力（空洞注意力）",
    "用 tokenizer 分词",                            # another word
])
def test_what_is_not_prose_or_allowed_passes(text):
    assert not terms.violations(text), terms.violations(text)


def test_the_glossary_tables_list_every_row():
    """The glossary page's two tables (Chinese edition): one row per concept, one per error."""
    from docutils import nodes

    term_table, error_table = terms._glossary_nodes("zh")
    term_rows = list(term_table.findall(nodes.row))
    error_rows = list(error_table.findall(nodes.row))
    assert len(term_rows) == len(terms.terms()) + 1          # + the header
    assert len(error_rows) == len(terms.table()["errors"]) + 1
    text = term_table.astext()
    assert "词元" in text and "token" in text and "中文" in text
    assert "mat1 and mat2 shapes cannot be multiplied" in error_table.astext()
