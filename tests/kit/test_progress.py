"""book.kit.progress: the one place a progress bar is made, silent in the book build."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from book.kit import progress

BOOK = Path(progress.__file__).resolve().parents[1]


@pytest.mark.parametrize(("env", "show", "silent"), [
    (None, True, False), ("0", True, False), ("1", True, True), (None, False, True),
])
def test_bar_is_silent_in_the_build_or_when_asked(monkeypatch, env, show, silent):
    if env is None:
        monkeypatch.delenv(progress.BUILD_ENV, raising=False)
    else:
        monkeypatch.setenv(progress.BUILD_ENV, env)
    bar = progress.bar(3, "work", show=show)
    try:
        assert bar.disable is silent
        assert bar.total == 3
    finally:
        bar.close()


@pytest.mark.parametrize(("total", "show", "error"), [
    (-1, True, ValueError), (2.5, True, TypeError), (True, True, TypeError),
    (3, "yes", TypeError), (3, 1, TypeError),
])
def test_bad_input_says_what_to_do(total, show, error):
    with pytest.raises(error, match="total|show"):
        progress.bar(total, show=show)


def test_every_bar_of_the_book_goes_through_the_kit():
    """A tqdm bar made elsewhere would show in the build where its work ran and not where the
    other edition loaded the result (book.kit.memo): the build's pages would then differ from a
    clean run's by chance."""
    imports = re.compile(r"^\s*(from|import) tqdm\b", re.MULTILINE)
    direct = [str(path.relative_to(BOOK.parent)) for path in sorted(BOOK.rglob("*.py"))
              if path != Path(progress.__file__).resolve()
              and imports.search(path.read_text(encoding="utf-8"))]
    assert not direct, f"these modules use tqdm themselves, not book.kit.progress.bar: {direct}"
