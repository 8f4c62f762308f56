"""Lines of mixed Chinese and Latin text: how wide they are drawn and where they may break.

One rule for the width (:func:`text_width`: a wide, i.e. CJK, character takes two columns) and
one line breaker (:func:`lines`) for every place the book lays text out itself: figure titles
(book.face.plotting.wrap) and the Chinese docstrings of shown code (book.kit.codetext).
Chinese breaks between words (jieba's dictionary with the terminology table's words, where
jieba is installed) and by 避头尾; a Latin word or number is never cut."""

from __future__ import annotations

import math
import re
import unicodedata

from book.kit import validate


def is_wide(char: str) -> bool:
    """Whether ``char`` is drawn two columns wide (one em): Unicode's East Asian Width W or F,
    i.e. CJK ideographs, kana, hangul, CJK and fullwidth punctuation (，。：（）), emoji."""
    return unicodedata.east_asian_width(char) in "WF"


def text_width(text: str) -> int:
    """The width of ``text`` in columns, a wide (CJK) character counting 2 and any other 1: the
    book's one rule for how much room a label, caption or line of mixed Chinese and Latin takes
    (``text_width("一碗 noodles") == 12``). Tags are counted as written; strip them first."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}; pass str(value)")
    return sum(2 if is_wide(c) else 1 for c in text)


def lines(text: str, width: int) -> list[str]:
    """``text`` (one paragraph, no line breaks) as balanced lines of at most ``width`` columns:
    breaks at spaces, after punctuation and between words, never inside a Latin word or number,
    no line starting with closing punctuation (，。、）」：；！？) or ending with an opening
    bracket (（「《); see :func:`_best_lines`."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    width = validate.integer("width", width, low=8)
    return _best_lines(text, width)


# 避头尾 (kinsoku): what may not start a line, and what may not end one
NO_LINE_START = frozenset("，。、：；！？）》」』】〕〉”’…·,.;:!?)]}%")
NO_LINE_END = frozenset("（《「『【〔〈“‘([{")
# characters that a Chinese word rarely continues past: a break after them splits no word
# (used where the word list, jieba's, is not installed)
_PARTICLES = frozenset("的了和与或及在是把被从对向为以并而但等")
_TAG = re.compile(r"</?[a-zA-Z]+>")
_LINE, _SPLIT_WORD, _ORPHAN = 2000, 5000, 1500   # costs: a line, a word cut, a lone last word


def _words(run: str) -> list[str]:
    """A run of Chinese characters cut into words: jieba's dictionary (with the terminology
    table's words) where it is installed, else one character each (then :func:`_break_cost`
    prefers breaks after punctuation and particles)."""
    segmenter = _segmenter()
    if segmenter is None:
        return list(run)
    return segmenter(run)


_SEGMENTER: list = []


def _segmenter():
    if not _SEGMENTER:
        try:
            import logging

            import jieba
        except ImportError:
            _SEGMENTER.append(None)
            return None
        jieba.setLogLevel(logging.ERROR)
        for word in _book_words():
            jieba.add_word(word)
        _SEGMENTER.append(lambda run: jieba.lcut(run, HMM=False))
    return _SEGMENTER[0]


def _book_words() -> list[str]:
    """The Chinese words of the book's terminology table (locale/terms.toml), which a general
    dictionary may not know (词元, 点积): a line never breaks inside them."""
    import tomllib
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "locale" / "terms.toml"
    if not path.is_file():
        return []
    table = tomllib.loads(path.read_text(encoding="utf-8"))
    words = []
    for entry in table.get("terms", {}).values():
        words += [w for w in re.split(r"[\s/（）()、，]+", str(entry.get("zh", "")))
                  if len(w) > 1 and all(is_wide(c) for c in w)]
    return words


def _pieces(part: str) -> list[str]:
    """``part`` cut where a line may break: each run of spaces, each Chinese word (or
    punctuation mark) alone, and each run of other characters (a Latin word, a number) whole;
    markup tags (``<b>``, ``</sup>``) stay with the text they mark."""
    raw: list[str] = []
    kinds: list[str] = []
    for chunk in re.split(r"(</?[a-zA-Z]+>)", part):
        if not chunk:
            continue
        if _TAG.fullmatch(chunk):
            raw.append(chunk)
            kinds.append("tag")
            continue
        for run in re.findall(r"\s+|[^\s]+", chunk):
            if run.isspace():
                raw.append(run)
                kinds.append("space")
                continue
            for bit in _script_runs(run):
                if is_wide(bit[0]):
                    for word in _words(bit):
                        raw.append(word)
                        kinds.append("wide")
                else:
                    raw.append(bit)
                    kinds.append("word")
    pieces: list[str] = []
    carry = ""   # opening tags wait for the text they open
    for piece, kind in zip(raw, kinds, strict=True):
        if kind == "tag" and not piece.startswith("</"):
            carry += piece
        elif kind == "tag" and pieces:
            pieces[-1] += piece
        else:
            pieces.append(carry + piece)
            carry = ""
    if carry:
        pieces.append(carry)
    return pieces


def _script_runs(run: str) -> list[str]:
    """``run`` (no spaces) in runs of wide and of other characters, each wide punctuation mark
    alone."""
    out: list[str] = []
    for c in run:
        wide = is_wide(c)
        if out and wide == is_wide(out[-1][-1]) and not (wide and (
                _visible(out[-1])[-1:] in NO_LINE_START | NO_LINE_END
                or c in NO_LINE_START | NO_LINE_END)):
            out[-1] += c
        else:
            out.append(c)
    return out


def _visible(piece: str) -> str:
    return _TAG.sub("", piece)


def _split_chars(piece: str) -> list[str]:
    """A word wider than a line in its characters, its tags kept with them."""
    out: list[str] = []
    carry = ""
    for chunk in re.split(r"(</?[a-zA-Z]+>)", piece):
        if not chunk:
            continue
        if _TAG.fullmatch(chunk):
            if chunk.startswith("</") and out:
                out[-1] += chunk
            else:
                carry += chunk
            continue
        for c in chunk:
            out.append(carry + c)
            carry = ""
    if carry:
        out.append(carry)
    return out


def _break_cost(before: str, after: str) -> float | None:
    """The cost of a line break between the pieces ``before`` and ``after`` (None: never)."""
    a, b = _visible(before), _visible(after)
    if not a or not b:
        return 0.0
    if b[0] in NO_LINE_START or a[-1] in NO_LINE_END:
        return None
    if a.isspace() or b.isspace() or a[-1] in NO_LINE_START or b[0] in NO_LINE_END:
        return 0.0
    if is_wide(a[-1]) != is_wide(b[0]):
        return 40.0    # Chinese next to Latin with no space: a pair like "d_k 的" reads apart
    if not is_wide(a[-1]):
        return None    # inside a Latin word or number
    if _segmenter() is not None or a[-1] in _PARTICLES:
        return 60.0    # between two words: after punctuation is better
    return 400.0       # between two characters, which may be one word


def _best_lines(part: str, width: int) -> list[str]:
    """One line of text as the fewest lines of at most ``width`` columns with the cheapest
    breaks (:func:`_break_cost`), then the most even lengths; a word wider than a line is cut
    only then, and a last line of one short word takes company from the line above."""
    lead = part[:len(part) - len(part.lstrip())]   # kept as written (" · share: …")
    pieces, inside = [], []   # inside[i]: pieces[i] continues the word before it
    for piece in _pieces(part.lstrip()):
        letters = _visible(piece)
        if text_width(letters) > width and letters and is_wide(letters[0]):
            chars = _split_chars(piece)
            pieces += chars
            inside += [False] + [True] * (len(chars) - 1)
        else:
            pieces.append(piece)
            inside.append(False)
    if not pieces:
        return [""]
    visible = [_visible(p) for p in pieces]
    n = len(pieces)
    space = [v.isspace() for v in visible]
    total = [0]                          # total[k]: the columns of pieces[:k]
    for v in visible:
        total.append(total[-1] + text_width(v))
    ends = [-1] * (n + 1)                # ends[j]: the last piece of pieces[:j] that is no space
    for j in range(1, n + 1):
        ends[j] = j - 1 if not space[j - 1] else ends[j - 1]
    breaks = [0.0] + [_SPLIT_WORD if inside[i] else _break_cost(pieces[i - 1], pieces[i])
                      for i in range(1, n)]
    best: list[tuple[float, int]] = [(0.0, -1)] + [(math.inf, -1)] * n
    for j in range(1, n + 1):          # best[j]: the cheapest lines of pieces[:j]
        end = ends[j]
        for i in range(min(end, j - 1), -1, -1):
            if space[i] or best[i][0] == math.inf or breaks[i] is None:
                if total[end + 1] - total[i] > 2 * width:
                    break
                continue
            used = total[end + 1] - total[i]
            hang = total[end + 1] - total[end] if visible[end][-1:] in NO_LINE_START else 0
            used = min(used, max(width, used - min(hang, 2)))   # a closing mark may hang
            if used > 2 * width and end > i:
                break
            # wider than the line only where no break is allowed (a long name in brackets)
            cost = breaks[i] + _LINE + (_SPLIT_WORD * (used - width) if used > width else 0)
            if j < n:
                cost += (width - used) ** 2 / 4
            elif i > 0 and used <= 2:
                cost += _ORPHAN
            elif i > 0 and used < width / 3:    # a short last line: balance the lines
                cost += (width / 3 - used) ** 2 / 4
            if cost + best[i][0] < best[j][0]:
                best[j] = (cost + best[i][0], i)
    if best[n][0] == math.inf:           # no allowed break at all: one line, as written
        return [part.rstrip()]
    cuts, j = [], n
    while j > 0:
        cuts.append(j)
        j = best[j][1]
    starts = [0] + sorted(cuts)[:-1]
    lines = ["".join(pieces[i:j]).strip() for i, j in zip(starts, sorted(cuts), strict=True)]
    return [lead + lines[0], *lines[1:]]
