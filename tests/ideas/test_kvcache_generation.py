"""book.ideas.kvcache, chapter 9 additions: the prefilled cache is cache_bytes exactly; timing
rows."""

from __future__ import annotations

import pytest
import torch

from book.ideas import kvcache


def small_model():
    return kvcache.TinyDecoder(vocab_size=16, d_model=16, n_heads=2, n_layers=3, max_len=64)


@pytest.mark.parametrize("n", [1, 5, 40])
def test_prefill_cache_has_the_size_of_the_formula(n):
    model = small_model()
    caches = model.prefill(torch.arange(n) % 16)
    assert len(caches) == 3
    for k, v in caches:
        assert k.shape == v.shape == (1, 2, n, 8)
    measured = sum(t.nbytes for layer in caches for t in layer)
    assert measured == kvcache.cache_bytes(3, n, 16, 4)


def test_prefill_keys_are_what_generation_attends_to():
    """The last prefilled position predicts what generate() predicts after the same tokens."""
    model = small_model().double()
    tokens = torch.tensor([3, 1, 4, 1, 5])
    logits = model(tokens[None])[0, -1]
    generated = model.generate(tokens, 1)
    assert int(generated[-1]) == int(logits.argmax())
    # prefilling in one go equals feeding the cache the same tokens step by step
    caches = model.prefill(tokens)
    step = [[None, None] for _ in model.layers]
    with torch.no_grad():
        for t in range(len(tokens)):
            x = model.embed(tokens[None, t:t + 1]) + model.pos(torch.arange(t, t + 1))
            for layer, cache in zip(model.layers, step, strict=True):
                x = model._block(layer, x, cache)
    for (k1, v1), (k2, v2) in zip(caches, step, strict=True):
        torch.testing.assert_close(k1, k2)
        torch.testing.assert_close(v1, v2)


def test_prefill_bad_input():
    model = small_model()
    with pytest.raises(ValueError, match="non-empty 1-D"):
        model.prefill([])
    with pytest.raises(ValueError, match=r"\[0, 15\]"):
        model.prefill([16])
    with pytest.raises(ValueError, match="max_len=64"):
        model.prefill(torch.zeros(65, dtype=torch.long))


def test_generation_times_rows():
    rows = kvcache.generation_times(small_model(), torch.arange(3), [2, 6])
    assert [r["n_new"] for r in rows] == [2, 6]
    for r in rows:
        assert r["same"] is True
        assert r["cached"] > 0 and r["full"] > 0
        assert r["speedup"] == pytest.approx(r["full"] / r["cached"])


def test_generation_times_bad_input():
    with pytest.raises(TypeError, match="TinyDecoder"):
        kvcache.generation_times(torch.nn.Linear(2, 2), [1], [2])
    with pytest.raises(ValueError, match="at least one"):
        kvcache.generation_times(small_model(), [1], [])
    with pytest.raises(ValueError, match="at least 1"):
        kvcache.generation_times(small_model(), [1], [0])
