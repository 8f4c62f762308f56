"""The teacher's guide in the Chinese edition (issue 48, item 6): its shell commands keep their
words and their comments are in Chinese, from locale/zh_CN/code/teachers_guide.po, the same way
the chapters' code comments are (book.site.editions.translate_code_comments); its examples of
what the grader writes are what the Chinese grader writes."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from book.classroom.feedback import Text
from book.kit import codetext
from book.site import editions, zh_notebooks

GUIDE = zh_notebooks.ROOT / "chapters" / "teachers_guide.md"
CATALOGUE = zh_notebooks.CODE_DIR / "teachers_guide.po"
GUIDE_PO = zh_notebooks.LOCALE / "LC_MESSAGES" / "chapters" / "teachers_guide.po"
CJK = re.compile(r"[\u4e00-\u9fff]")


def shell_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)


def test_the_guides_code_catalogue_holds_every_shell_comment_translated():
    comments = [text for block in shell_blocks() for _, _, text in codetext.comments(block)]
    assert len(comments) >= 5, "the scan found too few shell comments in the guide"
    catalogue = zh_notebooks.load_catalogue(CATALOGUE)
    assert set(catalogue) == set(comments), (
        "bring locale/zh_CN/code/teachers_guide.po in step with the guide's shell comments")
    for english, chinese in catalogue.items():
        assert CJK.search(chinese), (english, chinese)


@pytest.mark.parametrize("language", ["zh_CN", None])
def test_the_chinese_page_shows_the_same_commands_with_chinese_comments(language):
    from docutils import nodes
    from docutils.utils import new_document

    document = new_document("teachers_guide")
    blocks = []
    for text in shell_blocks():
        block = nodes.literal_block(text, text, language="bash")
        document += block
        blocks.append(block)
    cell = nodes.literal_block("make grade  # kept", "make grade  # kept", language="python")
    document += cell     # a block of another language is left alone
    app = SimpleNamespace(config=SimpleNamespace(language=language))
    editions.translate_code_comments(app, document, "chapters/teachers_guide")
    catalogue = zh_notebooks.load_catalogue(CATALOGUE)
    translated = 0
    for text, block in zip(shell_blocks(), blocks, strict=True):
        shown = block.astext()
        assert [line.split("#")[0] for line in shown.splitlines()] == [
            line.split("#")[0] for line in text.splitlines()], "a command changed"
        for _, _, comment in codetext.comments(text):
            if language is None:
                assert comment in shown
            else:
                assert comment not in shown and catalogue[comment] in shown
                translated += 1
    assert cell.astext() == "make grade  # kept"
    assert translated == (0 if language is None else len(catalogue))


def test_the_chinese_guide_quotes_what_the_chinese_grader_writes():
    """The examples of `detail` in the Chinese guide add, in quotes, the Chinese grader's words
    where it writes Chinese for a Chinese notebook (its own feedback); the English examples stay
    as code (an English notebook's feedback, and tests/test_editions.py keeps code spans), and
    what a crashed kernel or a broken file reports is English in both."""
    text = GUIDE_PO.read_text(encoding="utf-8")
    example = Text("classroom.case_problem", case=Text("classroom.case_causal_mask"),
                   problem=Text("classroom.differs", what=Text("classroom.what_weights")))
    assert f"“{example.to('zh')}”" in text
    assert f"“{Text('classroom.kernel_replaced', kernel=repr('myenv')).to('zh')}”" in text
    assert f"“{Text('classroom.written_to_read').to('zh')}”" in text
    timeout = Text("classroom.timeout", seconds=90).to("zh").split("运行")[0]
    assert f"“{timeout}…”" in text
