"""Chapter 9b (book.chapters.ch09b_serving): its three exercises (the KV cache's bytes, the
positions a decode step computes, the cache that weighs as much as the weights). Its figures
are tested with chapter 9's in tests/chapters/test_ch09_long_context.py (one test draws both)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from conftest import check_exercise
from conftest import check_message as message

from book.chapters import ch09b_serving
from book.face import checks
from book.ideas import kvcache


def test_cache_bytes_hints():
    right = checks.reference("ch9b.cache_bytes")
    assert "AND values" in message("ch9b.cache_bytes", right // 2)
    assert "2 bytes" in message("ch9b.cache_bytes", right * 2)
    assert "multiply by the layers" in message("ch9b.cache_bytes", right // 24)
    assert "not MiB" in message("ch9b.cache_bytes", right // 2**20)
    assert checks.check("ch9b.cache_bytes", float(right)).ok
    assert checks.check("ch9b.cache_bytes", np.int64(right)).ok


pytestmark = pytest.mark.usefixtures("one_thread")  # see conftest.py
KEYS = ("ch9b.cache_bytes", "ch9b.step_positions", "ch9b.cache_vs_weights")


def test_three_exercises_of_its_own():
    assert sorted(k for k in checks.registered() if k.startswith("ch9b.")) == sorted(KEYS)


@pytest.mark.parametrize("key", KEYS)
def test_reference_passes_and_mistakes_fail(key):
    check_exercise(key)


def test_references_are_computed_by_the_library():
    # counted on the decoder the chapter uses while it generates, not typed in
    model, prompt = kvcache.TinyDecoder(), torch.arange(ch09b_serving.PROMPT_LEN)
    done = ch09b_serving.DONE
    without = kvcache.positions_per_step(model, prompt, done + 1, use_cache=False)
    cached = kvcache.positions_per_step(model, prompt, done + 1, use_cache=True)
    assert checks.reference("ch9b.step_positions") == (without[done], cached[done])
    assert without[done] == ch09b_serving.PROMPT_LEN + done and cached[done] == 1
    # the blocks' weights (12 d² per layer, float16) over one token's cache
    layers, d = 32, 4096
    weights = layers * 12 * d * d * 2
    tokens = checks.reference("ch9b.cache_vs_weights")
    assert tokens * kvcache.cache_bytes(layers, 1, d, 2) == weights
    assert tokens == 6 * d


@pytest.mark.parametrize("answer,text", [((100, 1), "prompt"), ((107, 1), "Off by one"),
                                         ((109, 1), "Off by one"),
                                         ((108, 108), "read from memory"),
                                         ((1, 108), "other way round"), ((108, 0), "new token"),
                                         (108, "pair"), ((108, 1, 1), "pair"), ("ab", "pair"),
                                         ((50, 1), "every token so far")])
def test_step_positions_hints(answer, text):
    assert text in message("ch9b.step_positions", answer)


def test_step_positions_accepts_lists_arrays_and_floats():
    right = checks.reference("ch9b.step_positions")
    for answer in (list(right), np.array(right), tuple(float(v) for v in right),
                   torch.tensor(right)):
        assert checks.check("ch9b.step_positions", answer).ok, answer


def test_cache_vs_weights_hints():
    right = checks.reference("ch9b.cache_vs_weights")
    assert "keys AND its values" in message("ch9b.cache_vs_weights", 2 * right)
    assert "every layer" in message("ch9b.cache_vs_weights", 32 * right)
    assert "feed-forward" in message("ch9b.cache_vs_weights", right // 3)
    assert "weights themselves" in message("ch9b.cache_vs_weights", 32 * 12 * 4096**2)
    assert "divided by" in message("ch9b.cache_vs_weights", right + 1)
    assert checks.check("ch9b.cache_vs_weights", float(right)).ok
    assert checks.check("ch9b.cache_vs_weights", np.int64(right)).ok


@pytest.mark.parametrize("key,wrong", [("ch9b.cache_bytes", 1), ("ch9b.step_positions", (1, 1)),
                                       ("ch9b.cache_vs_weights", 1)])
def test_exercise_messages_in_chinese(chinese, key, wrong):
    for answer in (checks.reference(key), wrong):
        text = checks.check(key, answer).message
        assert re.search("[\u4e00-\u9fff]", text), (key, text)
        words = re.findall(r"[A-Za-z_]{3,}", text)
        assert set(words) <= {"d_model", "float16", "MiB"}, (key, text)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_figures_are_described_with_the_drawn_numbers(language):
    """Both figures carry a text alternative and a caption (book.face.figures.describe) in
    the edition's language; the caption's numbers are the ones drawn."""
    from book.face.figures import described
    from book.kit import i18n

    kv_rows = [{"n_new": 4, "cached": 0.1, "full": 0.2, "speedup": 2.0, "same": True},
               {"n_new": 8, "cached": 0.2, "full": 0.8, "speedup": 4.0, "same": True}]
    impl = [{"variant": v, "label": v, "seconds": 1.0, "vs_minimal": 1.0 + i / 10,
             "vs_minimal_low": 0.9, "vs_minimal_high": 1.1 + i / 10, "device": "cpu"}
            for i, v in enumerate(["sdpa", "minimal_sdpa", "torch_mha"])]
    try:
        i18n.set_language(language)
        kv = ch09b_serving.kv_speedup_figure(kv_rows)
        fig = ch09b_serving.implementations_figure(impl)
        for f in (kv, fig):
            texts = described(f.to_dict())
            assert texts is not None
            assert [bool(re.search("[\u4e00-\u9fff]", t)) for t in texts] == \
                [language == "zh"] * 2, texts
        caption = described(kv.to_dict())[1]
        assert all(f"{v:.1f}" in caption for v in kv.data[2].y)   # the bars' speed-ups
        caption = described(fig.to_dict())[1]
        assert f"{max(fig.data[0].x):.2f}" in caption and f"{min(fig.data[0].x):.2f}" in caption
    finally:
        i18n.set_language("en")


def test_the_speed_up_verdict_follows_the_bars():
    """"The speed-up grows with the length" only when each bar's label is larger than the one
    before: the page once said so beside 2.6× at 64 tokens and 2.4× at 128."""
    def rows(*speedups):
        return [{"n_new": 32 * 2 ** i, "speedup": s} for i, s in enumerate(speedups)]

    assert ch09b_serving.speedup_trend(rows(1.5, 2.6, 2.9, 4.0)) == "every"
    assert ch09b_serving.speedup_trend(rows(1.5, 2.6, 2.4, 4.0)) == "overall"
    assert ch09b_serving.speedup_trend(rows(2.0, 2.6, 1.96)) == "not"   # 2.0× shown for 1.96
    assert ch09b_serving.speedup_trend(rows(2.04, 2.6, 2.01)) == "not"   # 2.0× and 2.0×
    assert "not at every length" in ch09b_serving.speedup_verdict(rows(1.5, 2.6, 2.4, 4.0))
    with pytest.raises(ValueError, match="empty"):
        ch09b_serving.speedup_trend([])


def test_the_prose_words_follow_the_measurements():
    """The words the lesson's cells glue come from ch09b_serving's helpers (no string-table
    keys in the cells, issue 49) and follow the numbers measured."""
    assert ch09b_serving.same_verdict(True) == "identical"
    assert ch09b_serving.same_verdict(False) == "different"
    assert ch09b_serving.all_same_verdict([{"same": True}, {"same": False}]) == "NOT identical"
    assert ch09b_serving.all_same_verdict([{"same": True}]) == "identical"
    assert ch09b_serving.causal_note(True).startswith("it runs the same operators")
    assert ch09b_serving.causal_note(False).startswith("it runs other operators")
    assert ch09b_serving.production_verdict(0.8) == "20 % less time than the minimal SDPA layer"
    assert ch09b_serving.production_verdict(1.25) == "25 % more time than the minimal SDPA layer"
    assert "much more time" in ch09b_serving.production_consequence(1.1, 1.3)
    assert "faster in every round" in ch09b_serving.production_consequence(0.8, 0.95)
    assert "within the noise" in ch09b_serving.production_consequence(0.9, 1.1)
    assert ch09b_serving.gpu_note(None).startswith("No GPU")
    assert "(NVIDIA H100) was present" in ch09b_serving.gpu_note("NVIDIA H100", 0.5)
    assert "0.50× the time" in ch09b_serving.gpu_note("NVIDIA H100", 0.5)


def test_the_prose_words_in_chinese(chinese):
    words = [ch09b_serving.same_verdict(False), ch09b_serving.all_same_verdict([]),
             ch09b_serving.causal_note(True), ch09b_serving.production_verdict(0.8),
             ch09b_serving.production_consequence(0.9, 1.1), ch09b_serving.gpu_note(None)]
    assert all(re.search("[\u4e00-\u9fff]", w) for w in words), words
