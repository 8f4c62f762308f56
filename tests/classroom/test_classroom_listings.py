"""Assignments 02-04 ask for what the book does not print (issue 48, item 5): copying the
listing a chapter shows does not pass them.

* 02 asks for cross-attention (queries from ``x``, keys and values from ``memory`` of another
  length, a (T, S) mask); chapter 4 prints self-attention (``MultiHeadSelfAttention``).
* 03 asks for a sliding-window cache (a ring buffer of ``window`` slots); chapter 9b prints a
  ``decode`` whose cache keeps every token.
* 04 asks for interleaved heads (query head i reads key/value head ``i % n_kv_heads``); chapter
  11 prints ``GroupedQueryAttention.attend`` with consecutive groups (``i // group``).

Two ways each: the listing the chapter shows (``book.kit.codetext.listing`` of the shown
object), pasted as it is into the student notebook and graded by the real grader, fails; and
the book's own code behind that listing, called with the assignment's signature (the most a
student could make of it), scores no more than the public check on the questions it would
answer, and the detail tells why (the typical mistake's hint), in English and in Chinese.
"""

from __future__ import annotations

import csv
import shutil

import nbformat
import numpy as np
import pytest
import torch

from book import classroom
from book.classroom import fairness, sandbox
from book.classroom.assignments import ASSIGNMENTS
from book.ideas import gqa, kvcache, mha
from book.kit import codetext, i18n

CHAPTERS = classroom.ROOT / "chapters"
BY_STEM = {a.stem: a for a in ASSIGNMENTS.values()}

# stem: (chapter page, the show_source call on that page, the shown object, its members,
#        the start of the student's cell the listing replaces, the questions it would answer)
LISTINGS = {
    "02_mha_torch": ("04_pytorch", "book.show_source(MultiHeadSelfAttention",
                     mha.MultiHeadSelfAttention, ["__init__", "forward"],
                     "class MultiHeadCrossAttention", ("q2_module",)),
    "03_kv_cache": ("09b_serving", "book.show_source(kvcache.decode)", kvcache.decode, None,
                    "def decode(", ("q2_decode",)),
    "04_gqa": ("11_modern", "book.show_source(gqa.GroupedQueryAttention.attend)",
               gqa.GroupedQueryAttention.attend, None, "def gqa_attention(",
               ("q2_gqa_attention",)),
}


def public_share(stem: str, question: str) -> float:
    return sum(c.points for c in BY_STEM[stem].cases(0) if c.question == question and c.public)


@pytest.mark.parametrize("stem", sorted(LISTINGS))
def test_the_chapter_still_shows_the_listing(stem):
    """The listings below are the ones the book prints: if a chapter stops showing one, this
    says so (and the assignment may need another look)."""
    page, call, *_ = LISTINGS[stem]
    text = (CHAPTERS / f"{page}.ipynb").read_text(encoding="utf-8")
    assert call in text, f"chapter {page} no longer shows {call}…)"


# ---- the book's code behind the listing, called as the assignment calls it -----------------

class BookSelfAttention(mha.MultiHeadSelfAttention):
    """Chapter 4's module under the asked name and signature: what it computes is unchanged
    (self-attention over x), which is what copying it gives."""

    def forward(self, x, memory, mask=None):
        return super().forward(x)


def book_gqa_attention(q, k, v, causal=False):
    """Chapter 11's ``attend`` (consecutive groups) on the assignment's (heads, T, d) arrays."""
    h, T, d = np.shape(q)
    layer = gqa.GroupedQueryAttention(h * d, h, len(k)).double()
    allowed = torch.tril(torch.ones(T, T, dtype=torch.bool)) if causal else None
    with torch.no_grad():
        out, _ = layer.attend(*(torch.from_numpy(np.asarray(a))[None] for a in (q, k, v)),
                              allowed)
    return out[0].numpy()


def book_gqa_decode(q, k, v):
    return np.stack([book_gqa_attention(q[:, t:t + 1], k[:, :t + 1], v[:, :t + 1])[:, 0]
                     for t in range(q.shape[1])], axis=1)


ADAPTED = {  # stem: (functions, {question: the hint's message id}), over the reference
    "02_mha_torch": ({"MultiHeadCrossAttention": BookSelfAttention},
                     {"q2_module": "classroom.hint_self_attention"}),
    "03_kv_cache": ({"decode": lambda X, W_q, W_k, W_v, window:
                     kvcache.decode(X, W_q, W_k, W_v)[0],
                     "cache_bytes": lambda n_layers, n_tokens, d_model, nbytes, window:
                     kvcache.cache_bytes(n_layers, n_tokens, d_model, nbytes)},
                    {"q2_decode": "classroom.hint_no_window",
                     "q3_cache_bytes": "classroom.hint_cache_no_window"}),
    "04_gqa": ({"kv_head": gqa.kv_head_of, "gqa_attention": book_gqa_attention,
                "decode": book_gqa_decode},
               {"q1_kv_head": "classroom.hint_consecutive_index",
                "q2_gqa_attention": "classroom.hint_consecutive_groups",
                "q3_decode": "classroom.hint_consecutive_groups"}),
}
AS_PRINTED = {  # the book's objects under the asked names, signatures as they are
    "02_mha_torch": {"MultiHeadCrossAttention": mha.MultiHeadSelfAttention},
    "03_kv_cache": {"decode": kvcache.decode, "cache_bytes": kvcache.cache_bytes},
    "04_gqa": {"kv_head": gqa.kv_head_of},
}


def _hint_start(msg_id: str, language: str) -> str:
    """The hint's first words, before any value (a row's detail is cut at 400 characters)."""
    return i18n.table()[msg_id][language].split("{")[0][:24]


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("stem", sorted(ADAPTED))
def test_the_books_code_called_as_asked_earns_the_public_check_only_and_is_told_why(stem,
                                                                                    language):
    assignment = BY_STEM[stem]
    reference = fairness.reference(stem)
    functions, hints = ADAPTED[stem]
    for seed in (0, 1):
        right = fairness.scores(assignment, reference, seed)
        assert right == assignment.questions(), (stem, right)
        rows = {r["question"]: r for r in fairness.run_answer(
            assignment, {**reference, **functions}, seed, language=language)}
        for question, hint in hints.items():
            row = rows[question]
            assert row["score"] <= public_share(stem, question), (stem, question, row)
            assert _hint_start(hint, language) in row["detail"], (stem, question, row["detail"])
        printed = fairness.scores(assignment, {**reference, **AS_PRINTED[stem]}, seed)
        for question in hints:
            if any(c.function in AS_PRINTED[stem] for c in assignment.cases(seed)
                   if c.question == question):
                assert printed[question] <= public_share(stem, question), (stem, question)


# ---- the listing as printed, pasted into the student notebook, graded for real -------------

@pytest.mark.slow
def test_the_printed_listing_pasted_into_the_student_notebook_fails(tmp_path):
    sources = tmp_path / "sources"
    sources.mkdir()
    for stem in LISTINGS:
        shutil.copy2(classroom.SOURCES / f"{stem}.ipynb", sources / f"{stem}.ipynb")
    generated = classroom.generate(tmp_path / "out", sources, check_solutions=False,
                                   languages=("en",))
    subs = tmp_path / "subs"
    subs.mkdir()
    for stem, (_, _, shown, members, start, _) in LISTINGS.items():
        listing = codetext.listing(shown, members)
        assert listing.strip() and "def " in listing
        nb = nbformat.read(generated[stem]["student"], as_version=4)
        [cell] = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith(start)]
        cell.source = listing
        nbformat.write(nb, subs / f"{stem}.ipynb")
        solved = nbformat.read(generated[stem]["solutions"], as_version=4)
        nbformat.write(solved, subs / f"{stem}__reference.ipynb")
    csv_path = tmp_path / "grades.csv"
    rows = classroom.grade(subs, csv_path, seed=5, progress=False,
                           unsandboxed=sandbox.bwrap() is None)
    for stem, (*_, questions) in LISTINGS.items():
        mine = {r["question"]: r for r in rows if r["submission"] == f"{stem}.ipynb"}
        right = {r["question"]: r for r in rows if r["submission"] == f"{stem}__reference.ipynb"}
        graded = [r for r in right.values() if r["status"] == "graded"]
        assert graded and all(r["score"] == r["possible"] for r in graded), right
        for question in questions:
            assert mine[question]["status"] == "graded", mine[question]
            assert mine[question]["score"] <= public_share(stem, question), mine[question]
        got = sum(r["score"] for r in mine.values() if r["status"] == "graded")
        assert got < sum(r["possible"] for r in graded), (stem, got)
    with csv_path.open(encoding="utf-8", newline="") as f:
        assert len(list(csv.DictReader(f))) == len(rows)
