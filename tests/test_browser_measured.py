"""Figures of what the reader's machine measured stay legible on any machine.

Times, speed-ups and time shares differ from one CPU to the next, and with them the axes'
ranges, which tick lands next to a subplot title, which slope a legend names, how wide a bar's
text is. The built book's legibility check sees only what the machine that built it measured:
CI's CPU drew chapter 11's top tick "2" into its panel title "ms per new token" at 390 px while
this machine's build was clean. So each figure that draws a measurement is drawn here from
made-up measurements at many scales (peaks just under, at and over round numbers), in both
languages, and checked at 1280 and 390 px in the book's fonts (make test) and the wide fallback
(make test-all and CI).
No build needed: bare pages (tests/figures_page.py).
"""

from __future__ import annotations

import legibility
import pytest
from test_browser import LEGIBILITY_FONTS, browser  # noqa: F401  (browser: the module's Chromium)

pytestmark = pytest.mark.slow

# The largest measured value of a figure, in its drawn unit: a top tick at, just under and just
# over the plot's top edge, from sub-unit to three-digit values.
PEAKS = (0.097, 0.5, 0.96, 1.0, 1.9, 2.0, 4.8, 5.0, 9.6, 10.0, 19.5, 20.0, 48.0, 97.0, 100.0)


def _kv_cache(peak_ms: float) -> object:
    """Chapter 11: cache bytes and ms per decoded token against the key/value heads."""
    from book.chapters import ch11_modern

    counts = (1, 2, 4, 8)
    per_head = 2 * 2 * 32 * (256 + 32) * 4  # layers × (K, V) × d_head × tokens × float32 bytes
    return ch11_modern.kv_figure([
        {"n_kv_heads": c, "cache_bytes": c * per_head, "formula_bytes": c * per_head,
         "seconds_per_token": peak_ms / 1e3 * (0.55 + 0.45 * c / counts[-1])} for c in counts])


def _kv_speedup(peak: float) -> object:
    """Chapter 9b: generation time with and without the cache (s), and the speed-up."""
    from book.chapters import ch09b_serving

    lengths = (32, 64, 128, 256, 512)
    rows = []
    for n in lengths:
        speedup = 1 + peak * n / lengths[-1]
        full = peak * (n / lengths[-1]) ** 2
        rows.append({"n_new": n, "full": full, "cached": full / speedup, "speedup": speedup})
    return ch09b_serving.kv_speedup_figure(rows)


def _implementations(peak: float) -> object:
    """Chapter 9b: each implementation's time relative to the yardstick, with its range."""
    from book.chapters import ch09b_serving
    from book.ideas import efficient

    names = list(efficient.NAMES)
    rows = []
    for i, name in enumerate(names):
        ratio = 1.0 if name == efficient.YARDSTICK else 0.8 + peak * (i + 1) / len(names)
        rows.append({"variant": name, "device": "cpu", "vs_minimal": ratio,
                     "vs_minimal_low": 0.9 * ratio, "vs_minimal_high": 1.1 * ratio,
                     "seconds": 1e-3 * ratio})
    return ch09b_serving.implementations_figure(rows)


def _attention_cost(peak_ms: float) -> object:
    """Chapter 9: ms per attention call against n, log-log, each method its own slope."""
    from book.chapters import ch09_long_context
    from book.ideas import longctx

    ns = [256, 512, 1024, 2048]
    sweep = {"n": ns}
    for k, method in enumerate(longctx.METHODS):
        slope, share = 2.0 - 0.3 * k, 1.0 / (1 + k)
        sweep[method] = [peak_ms / 1e3 * share * (n / ns[-1]) ** slope for n in ns]
    return ch09_long_context.attention_cost_figure(sweep, "time")


def _block_share(peak: float) -> object:
    """Chapter 9: the shares of one block's time (the attention's grows with n)."""
    from book.chapters import ch09_long_context

    rows = []
    for i, n in enumerate((128, 256, 512, 1024, 2048)):
        attention = min(0.9, 0.01 * peak * 2 ** i)
        rest = 1 - attention
        rows.append({"n": n, "projections": 0.4 * rest, "attention": attention,
                     "feed_forward": 0.6 * rest, "total": 1.0,
                     "attention_flop_share": min(0.95, 0.05 * 2 ** i)})
    return ch09_long_context.block_share_figure(rows)


def _variant_cost(peak_ms: float) -> object:
    """Chapter 10: ms of each attention variant against n, log-log."""
    from book.chapters import ch10_beyond
    from book.kit import i18n

    ns = [16, 64, 256, 1024, 2048]
    slopes = {"full": 2.0, "window": 1.0, "dilated": 1.05, "hybrid": 1.2, "linear": 0.9}
    curves = {name: [peak_ms * (n / ns[-1]) ** s for n in ns] for name, s in slopes.items()}
    return ch10_beyond.variant_cost_figure(ns, curves, unit=i18n.tr("ch10.time_y"),
                                           title=i18n.tr("ch10.time_title"))


MEASURED = {"ch11 kv cache": _kv_cache, "ch09b kv speed-up": _kv_speedup,
            "ch09b implementations": _implementations, "ch09 attention time": _attention_cost,
            "ch09 block shares": _block_share, "ch10 variant time": _variant_cost}


def _page(make, language: str, path):
    """A bare page of ``make``'s figure at every peak, as the book's renderer writes them."""
    import figures_page
    import plotly.io as pio

    from book.face import display
    from book.kit import i18n

    before = i18n.language()
    display.setup(language=language)
    try:
        parts = [pio.renderers["book"].to_mimebundle(make(peak).to_dict())["text/html"]
                 for peak in PEAKS]
    finally:
        i18n.set_language(before)
    figures_page.write_page(parts, path, language=language)
    return path


@pytest.mark.parametrize("font", LEGIBILITY_FONTS)  # the fallback: make test-all, CI
@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("name", list(MEASURED))
def test_measured_figure_is_legible_at_any_scale(browser, tmp_path, name, language,  # noqa: F811
                                                 font):
    path = _page(MEASURED[name], language, tmp_path / "page.html")
    findings, figures = [], 0
    for width in (legibility.DESKTOP, legibility.PHONE):
        report = legibility.check_page(browser, path, width, font=font,
                                       shots=tmp_path / "shots")
        figures += report["figures"]
        findings += [f for f in report["findings"] if f["kind"] != "too_long"]
    assert figures == 2 * len(PEAKS), f"{figures} figures drawn of {2 * len(PEAKS)}"
    listed = "\n".join(f"peak {PEAKS[int(f['figure'].split()[1])]}: "
                       + legibility.describe(f) for f in findings)
    assert not findings, (f"{name} ({language}, {font} font): {len(findings)} findings "
                          f"(screenshots in {tmp_path / 'shots'}):\n{listed[:6000]}")
