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
            # without its bracketed glosses, first_use is the Chinese form (or its first part)
            introduced = terms.unglossed(term.first_use)
            assert introduced and term.zh.startswith(introduced), \
                f"{term.id}: first_use {term.first_use!r} must introduce {term.zh!r}"
    errors = terms.table()["errors"]
    assert len(errors) >= 8, "the glossary gives the key words of PyTorch's common errors"
    assert all(re.search("[\u4e00-\u9fff]", row["zh"]) for row in errors.values())


def test_every_chinese_text_uses_the_table():
    """Each rejected form in a msgstr (locale/zh_CN/**/*.po) or a zh string (book/strings) fails,
    named with its file and entry."""
    texts = list(terms.chinese_texts())
    assert len(texts) > 1000, f"only {len(texts)} Chinese texts found: wrong root?"
    bad = [f"{where}: {problem}" for where, text in texts
           for problem in terms.violations(text, where)]
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


def test_the_order_labels_are_rejected_as_labels_only():
    """不要 and 多加 are words of the orders themselves: rejected as a label's name (a string
    table's [label_…] entry), not in prose; "1 份" likewise."""
    label = "book/strings/ch08.toml: [label_omit] zh"
    assert any(v.startswith("order_labels:") for v in terms.violations("不要", label))
    assert any(v.startswith("order_labels:") for v in terms.violations(
        "1 份", "book/strings/ch05.toml: [label_count_1] zh"))
    assert not terms.violations("去掉", label)
    for where in (None, "book/strings/ch01.toml: [heads_caption] zh",
                  "locale/zh_CN/LC_MESSAGES/chapters/08_seeing_attention.po: msgid 'x'"):
        assert not terms.violations("一碗牛肉面，不要香菜，多加辣", where)


def test_the_english_glossary_lists_every_term():
    """The English edition's glossary page (glossary.md's terms-glossary directive) is a table
    of every term: the English term, its Chinese form, a note in English."""
    from docutils import nodes

    page = (terms.ROOT / "glossary.md").read_text(encoding="utf-8")
    assert ":::{terms-glossary} terms" in page
    (table,) = terms._glossary_nodes("en")
    rows = list(table.findall(nodes.row))
    assert len(rows) == len(terms.terms()) + 1          # + the header
    assert [e.astext() for e in rows[0].findall(nodes.entry)] == ["term", "Chinese", "note"]
    for term, row in zip(terms.terms(), rows[1:], strict=True):
        cells = [e.astext() for e in row.findall(nodes.entry)]
        assert cells[:2] == [term.en, term.zh], term.id
        # a note in the Chinese edition has its English one here
        assert bool(cells[2]) == bool(term.note) and not re.search(
            "[\u4e00-\u9fff]{4,}", cells[2]), (term.id, cells[2])


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


# --- the core terms carry their English where the book first uses them ---------------------

# The glossary page promises that a term comes with its English word the first time it is used
# (glossary.md). These four are the ones every chapter leans on; their glosses come from
# locale/terms.toml's first_use ("查询（query） / 键（key） / 值（value）").
CORE = ("token", "query_key_value", "mask", "padding")
# words in which a core term's characters mean something else (值得 is "worth", 关键 "crucial")
NOT_THE_TERM = {
    "键": ("关键", "键盘", "键值缓存"),
    "值": ("值得", "数值", "取值", "均值", "阈值", "最大值", "最小值", "极值", "峰值", "期望值",
          "估计值", "差值", "绝对值", "平均值", "近似值", "比值", "有限值", "默认值", "真值",
          "特征值", "屏蔽值", "分数值", "概率值", "精确值", "正值", "负值", "零值", "初值"),
    "填充": ("填充值",),
}


def book_pages() -> list[str]:
    """The landing page, then the chapters, in _toc.yml's order."""
    import yaml

    toc = yaml.safe_load((terms.ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [toc["root"]] + [entry["file"] for part in toc.get("parts", [])
                            for entry in part["chapters"]]


def page_prose(page: str) -> list[str]:
    """The Chinese prose of ``page``'s catalogue, message by message in page order, without
    emphasis marks, code, math and roles."""
    from babel.messages.pofile import read_po

    path = terms.ROOT / "locale" / "zh_CN" / "LC_MESSAGES" / f"{page}.po"
    if not path.is_file():
        return []
    with path.open("rb") as handle:
        return [terms._NOT_PROSE.sub(" ", re.sub(r"\*+", "", m.string))
                for m in read_po(handle) if m.id and m.string]


def occurrences(form: str, text: str):
    """Where ``form`` stands for the term in ``text`` (not inside a word of NOT_THE_TERM)."""
    for match in re.finditer(re.escape(form), text):
        start = match.start()
        if not any(text[i:i + len(word)] == word
                   for word in NOT_THE_TERM.get(form, ())
                   for i in range(max(0, start - len(word) + 1), start + 1)):
            yield start


def glossed_here(text: str, start: int, form: str, gloss: str) -> bool:
    """``form`` at ``start`` carries ``gloss`` in brackets, right after it or after the word
    it begins ("填充掩码（padding mask）")."""
    return re.match(re.escape(form) + r"[\u4e00-\u9fff]{0,3}（[^（）]*(?<![A-Za-z])"
                    + re.escape(gloss) + r"(?![A-Za-z])[^（）]*）", text[start:]) is not None


def first_uses(pages: list[str]):
    """(form, gloss, page, text around the first use or None) for each core form: its first
    use over ``pages`` in order."""
    rows = {t.id: t for t in terms.terms()}
    for term_id in CORE:
        for form, gloss in terms.glosses(rows[term_id].first_use):
            found = None
            for page in pages:
                for text in page_prose(page):
                    start = next(occurrences(form, text), None)
                    if start is not None:
                        found = (page, text, start)
                        break
                if found:
                    break
            yield form, gloss, found


def unglossed_first_uses(pages: list[str]) -> list[str]:
    bad = []
    for form, gloss, found in first_uses(pages):
        assert found, f"{form} is never used in {pages[:3]}…: wrong pages?"
        page, text, start = found
        if not glossed_here(text, start, form, gloss):
            bad.append(f"{page}: first {form} without （{gloss}）: "
                       f"…{text[max(0, start - 20):start + 20]}…")
    return bad


def test_core_terms_have_their_glosses_in_the_table():
    rows = {t.id: t for t in terms.terms()}
    for term_id in CORE:
        assert terms.glosses(rows[term_id].first_use), \
            f"[terms.{term_id}] needs a first_use with its English in brackets"


def test_core_terms_carry_their_english_at_first_use():
    """The first use of 词元, 查询, 键, 值, 掩码 and 填充 in the Chinese edition, in book order,
    carries its English word: on the landing page, and in the first chapter that uses it."""
    pages = book_pages()
    bad = unglossed_first_uses(pages[:1]) + unglossed_first_uses(pages[1:])
    assert not bad, "\n".join(bad)


def test_a_missing_first_use_gloss_is_caught():
    assert glossed_here("把查询（query）、键（key）和值", 1, "查询", "query")
    assert glossed_here("因果掩码（causal mask）", 2, "掩码", "mask")
    assert glossed_here("填充掩码（padding mask）", 0, "填充", "padding")
    assert not glossed_here("把查询、键（key）", 1, "查询", "query")
    assert not glossed_here("键和值（value）", 0, "键", "key")
    assert list(occurrences("值", "一个值得信赖的模块，查询、键和值")) == [15]
