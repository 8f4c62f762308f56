"""Chapter 8b's exercise checkers: the reference passes, each listed slip gets a hint, an
unanswered exercise is "todo". (tests/test_checks.py sees these exercises only once
book.chapters.ch08b_real_model is imported, so the generic checks are repeated here for them.)"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import check_exercise
from conftest import check_message as message

from book import chapters
from book.chapters import ch08b_real_model
from book.face import checks
from book.real import head_stats

pytestmark = pytest.mark.usefixtures("one_thread")
KEYS = sorted(k for k in chapters.exercises() if k.startswith("ch8b."))


def test_three_exercises():
    assert len(KEYS) >= 3


@pytest.mark.parametrize("key", KEYS)
def test_reference_passes_and_mistakes_fail(key):
    check_exercise(key)


def test_references_agree_with_the_measurements():
    d = ch08b_real_model._measured()
    e = head_stats.entropies(d["maps"])["all"].mean(axis=1)
    assert checks.reference("ch8b.broad_layer") == int(e.argmax())
    prev = d["shares"]["previous token"]["mass"]
    assert prev[checks.reference("ch8b.previous_head")] == prev.max() > 0.5


def test_hints():
    assert "from zero" in message("ch8b.broad_layer", checks.reference("ch8b.broad_layer") + 1)
    assert "layers" in message("ch8b.broad_layer", 99)
    assert "pair" in message("ch8b.previous_head", "L0 H2")
    assert "function itself" in message("ch8b.word_map", np.eye(3))


def test_word_map_accepts_an_equivalent_loop():
    def to_words(weights, words):
        ids = sorted({w for w in words if w is not None})
        out = np.zeros((len(ids), len(ids)))
        for a, wa in enumerate(ids):
            rows = [t for t, w in enumerate(words) if w == wa]
            for b, wb in enumerate(ids):
                cols = [t for t, w in enumerate(words) if w == wb]
                out[a, b] = np.mean([sum(weights[r][c] for c in cols) for r in rows])
        return out

    assert checks.check("ch8b.word_map", to_words).ok

    def blank(weights, words):
        ...

    assert checks.check("ch8b.word_map", blank).status == "todo"
