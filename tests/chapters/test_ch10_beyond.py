"""Chapter 10 (book.chapters.ch10_beyond): the pattern explorer (static and live faces) and the
chapter's Chinese edition (the variants themselves, book.ideas.beyond, are tested in
tests/ideas/test_beyond.py)."""

from __future__ import annotations

import json

import faces
import numpy as np

from book.chapters import ch10_beyond
from book.face import checks


def test_pattern_explorer_controls_change_the_pattern():
    fig = ch10_beyond.pattern_figure()
    assert [b.label for b in fig.layout.updatemenus[0].buttons] == list(ch10_beyond.PATTERN_KINDS)
    steps = fig.layout.sliders[0].steps
    assert steps[0].args[0]["z"] != steps[-1].args[0]["z"]
    # each variant's button swaps in its grid, its title and its own slider steps, so the
    # title names what is drawn whichever control moved last
    buttons = fig.layout.updatemenus[0].buttons
    assert len({json.dumps(b.args[0]["z"]) for b in buttons}) == len(buttons)
    for kind, button in zip(ch10_beyond.PATTERN_KINDS, buttons, strict=True):
        layout = button.args[1]
        assert layout["title.text"].startswith(f"{kind}, w = 1")
        assert [s["args"][1]["title.text"].split(":")[0] for s in layout["sliders[0].steps"]] \
            == [f"{kind}, w = {w}" for w in (1, 2, 3, 4)]
        assert layout["sliders[0].active"] == 0


def test_pattern_live_extremes():
    live = ch10_beyond.pattern_live()
    for values in ({"kind": "hybrid", "window": 16, "dilation": 8, "n_global": 8, "n": 1},
                   {"kind": "dilated", "window": 0, "dilation": 1, "n_global": 0, "n": 128}):
        live.update(**values)
        z = np.asarray(live.figure.data[0].z)
        assert z.shape == (values["n"], values["n"]) and z.diagonal().all()


def test_pattern_live_is_not_built_from_pattern_figure(monkeypatch):
    """The two faces are siblings (both start from _pattern_plot): the live face never calls
    the static one."""
    faces.forbid(monkeypatch, ch10_beyond, "pattern_figure")
    live = ch10_beyond.pattern_live()
    live.update(n=5)
    layout = live.figure.layout
    assert not layout.sliders and not layout.updatemenus and len(live.figure.data[0].z) == 5


def test_chapter10_figures_and_messages_in_chinese():
    """The Chinese edition: the pattern explorer, the cost figures and the exercise messages
    carry no English word (w, n, r, MiB and the like stay)."""
    import re

    from book.chapters import ch10_beyond
    from book.kit import i18n

    def english(texts):
        words = re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", " ".join(t for t in texts if t))
        return [w for w in words if w not in ("br", "extra", "MiB", "elu")]

    i18n.set_language("zh")
    try:
        fig = ch10_beyond.pattern_figure()
        texts = [fig.layout.title.text, fig.layout.xaxis.title.text,
                 fig.layout.yaxis.title.text, fig.data[0].hovertemplate,
                 fig.layout.sliders[0].currentvalue.prefix]
        for button in fig.layout.updatemenus[0].buttons:
            texts += [button.label, button.args[1]["title.text"]]
            texts += [s["args"][1]["title.text"] for s in button.args[1]["sliders[0].steps"]]
        assert english(texts) == [], english(texts)
        assert fig.layout.updatemenus[0].buttons[0].label == "完整"
        cost = ch10_beyond.variant_cost_figure([16, 64], {"full": [1, 2], "linear": [1, 1]},
                                               unit=i18n.tr("ch10.time_y"),
                                               title=i18n.tr("ch10.time_title"))
        assert english([t.name for t in cost.data] + [cost.layout.xaxis.title.text]) == []
        message = checks.check("ch10.linear_state", 10_000 * 64).message
        assert "序列" in message
    finally:
        i18n.set_language("en")
    assert ch10_beyond.kind_label("window") == "window"


def _ch10_figures():
    return {"pattern": ch10_beyond.pattern_figure(),
            "pattern, live": ch10_beyond.pattern_live().figure,
            "cost": ch10_beyond.variant_cost_figure(
                [16, 64, 256, 1024], {"full": [1, 16, 256, 4096], "window": [1, 4, 16, 64],
                                      "linear": [2, 8, 32, 128]}, unit="MiB", title="memory")}


def test_every_figure_is_described_in_both_languages():
    import re

    from book.face.figures import described
    from book.kit import i18n

    for language in ("en", "zh"):
        try:
            i18n.set_language(language)
            for name, fig in _ch10_figures().items():
                texts = described(fig.to_dict())
                assert texts is not None, name
                has_cjk = [bool(re.search("[\u4e00-\u9fff]", t)) for t in texts]
                if language == "zh":
                    assert all(has_cjk), (name, texts)
                else:
                    assert not any(has_cjk), (name, texts)
        finally:
            i18n.set_language("en")


def test_caption_numbers_are_the_figures_data():
    import re

    from book.face.figures import described
    from book.ideas import beyond, longctx

    figs = _ch10_figures()
    # the pattern: each menu entry's keys per query at the first window, as drawn
    fig = figs["pattern"]
    caption = described(fig.to_dict())[1]
    for button in fig.layout.updatemenus[0].buttons:
        z = np.asarray(button.args[0]["z"][0])
        assert f"{button.label} {z.sum(axis=1).mean():.1f}" in caption
    # the cost: slopes over the last three lengths, and the last point, as drawn
    fig = figs["cost"]
    caption = described(fig.to_dict())[1]
    for trace in fig.data:
        slope = longctx.fit_exponent(list(trace.x)[-3:], list(trace.y)[-3:])
        assert f"{trace.name} {slope:.2f}" in caption
    assert "At n = 1024, MiB: full 4,096, window 64, linear 128." in caption
    # the lines differ by dash and marker, not by colour alone
    assert len({(t.line.dash, t.marker.symbol) for t in fig.data}) == len(fig.data)
    assert len({t.line.dash for t in fig.data}) == len(fig.data)
    assert re.search(r"n = 64 on", caption)
    assert beyond.PATTERN_N == len(figs["pattern"].data[0].x)


def test_the_accuracy_table_and_claim_follow_the_results():
    """The lesson's accuracy table and the summary's claim (issue 49: they left the notebook
    for the chapter module) name each variant and follow the numbers, whichever way they go."""
    from book.kit import i18n

    results = {"scratch": 0.5, "window-2": 0.62, "linear": 0.4}
    table = ch10_beyond.accuracy_table(results)
    assert table.splitlines()[2:] == ["| full (plain multi-head) | 50.0 % |",
                                      "| window, w = 2 | 62.0 % |",
                                      "| linear (elu + 1) | 40.0 % |"]
    assert ch10_beyond.accuracy_claim(results).endswith("window, w = 2 scored higher")
    assert ch10_beyond.accuracy_claim({**results, "scratch": 0.7}).endswith("the most accurate")
    assert ch10_beyond.first_win([256, 1024]) == 256
    assert ch10_beyond.first_win([]) == "never"
    assert ch10_beyond.short_time_verdict("full") == "the least time"
    assert "window was faster" in ch10_beyond.short_time_verdict("window")
    i18n.set_language("zh")
    try:
        assert "窗口注意力，w = 2" in ch10_beyond.accuracy_claim(results)
        assert ch10_beyond.first_win([]) == "从未"
        assert ch10_beyond.memory_figure([16, 64], {"full": [1, 2]}).layout.title.text \
            == "一次注意力调用的内存"
    finally:
        i18n.set_language("en")
