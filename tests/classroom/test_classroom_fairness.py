"""Fair marks (issue 29): per question, no constant or shape-only answer scores more than the
public checks' share, the reference scores full marks, and a float32 reference does too where
the task does not ask for float64 — over several seeds of the hidden inputs. The table is the
one ``python -m book.classroom fairness`` prints."""

from __future__ import annotations

import pytest

from book.classroom import fairness
from book.classroom.assignments import ASSIGNMENTS

ROWS = fairness.table(seeds=range(3))


def test_every_question_is_in_the_table():
    asked = {(a.stem, q) for a in ASSIGNMENTS.values() for q in a.questions()}
    assert {(r["assignment"], r["question"]) for r in ROWS} == asked


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r['assignment']}-{r['question']}")
def test_constants_score_at_most_the_public_share_and_references_score_full(row):
    assert row["constant"] <= row["public"], row
    assert row["reference"] == row["possible"], row
    assert row["float32"] in (None, row["possible"]), row


def test_fair_rejects_a_row_where_a_constant_earns_hidden_marks():
    bad = dict(ROWS[0], constant=ROWS[0]["public"] + 1)
    assert fairness.fair(ROWS) and not fairness.fair([bad, *ROWS[1:]])
