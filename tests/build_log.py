"""What a newcomer should not have to read in a build's output: library log lines.

A library logger's lines below WARNING (fontTools' subsetter wrote ~700 of them, glyph names and
ids, into the Chinese build) in any of the formats they come in: Python's default
(``INFO:fontTools.subset:…``), the one a11y_pygments sets on the root logger when the theme
imports it (``# 2026-01-01 10:00:00,000 INFO fontTools.subset __init__.py:3791 -- …``), and
fontTools' own ``Glyph names:`` / ``Glyph IDs:`` lines, and jieba's loading of its dictionary
(its logger writes the bare message: "Building prefix dict …", "Loading model cost …"); each
possibly prefixed with its edition (``[zh] …``, book/site/builds.py)."""

from __future__ import annotations

import re

LIBRARY_LOG = re.compile(r"^(?:\[[^\]]*\] )?(?:# [\d-]+ [\d:,.]+ )?(?:DEBUG|INFO)[: ][\w.]+[: ]"
                         r"|Glyph (?:names|IDs):"
                         r"|Building prefix dict|Loading model (?:from cache|cost)"
                         r"|Prefix dict has been built", re.M)


def library_log_lines(text: str) -> list[str]:
    """The lines of ``text`` that a library logger wrote below WARNING."""
    return [line for line in text.splitlines() if LIBRARY_LOG.search(line)]
