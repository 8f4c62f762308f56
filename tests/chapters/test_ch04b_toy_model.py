"""book.chapters.ch04b_toy_model: the sample orders and tables come from the task's own rules,
the diagram is sized from the model's config, the per-token test tells the feed-forward layer
from attention, and the exercises (reference passes, listed mistakes fail with a hint)."""

from __future__ import annotations

import math

import pytest
from conftest import check_exercise, figure_texts

from book import chapters
from book.chapters import ch04b_toy_model as ch
from book.face import checks
from book.toy import orders
from book.toy.train import MODEL

pytestmark = pytest.mark.usefixtures("one_thread")
KEYS = sorted(k for k in chapters.exercises() if k.startswith("ch4b."))


def test_at_least_three_exercises():
    assert len(KEYS) >= 3


@pytest.mark.parametrize("key", KEYS)
def test_exercise_checker(key):
    check_exercise(key)


def test_labels_exercise_follows_the_rules():
    want = [lab for lab in orders.Order.from_text(ch.EXERCISE_ORDER).labels if lab != orders.NONE]
    assert want == ["count_2", "omit", "omit", "extra"]
    assert checks.check("ch4b.labels", "count_2").status == "bad"   # a string, not a list


def test_sample_orders_show_both_kinds_of_label_and_a_clause_boundary():
    samples = ch.sample_orders()
    assert len(samples) == 3 and samples == ch.sample_orders()   # deterministic
    for o in samples:
        assert len(orders.clauses(o.tokens)) > 1
        assert any(lab.startswith("count_") for lab in o.labels)
        assert sum(c == "ingredient" for c in o.categories) >= 2
    rows = ch.order_rows(samples)
    assert [r[0] for r in rows] == [o.text for o in samples]
    # every scored word is listed with its label, nothing else
    assert rows[0][2].count("→") == sum(lab != orders.NONE for lab in samples[0].labels)
    with pytest.raises(ValueError, match="at most 10"):
        ch.sample_orders(11)


def test_label_table_sums_to_all_scored_tokens():
    data = orders.generate(200, seed=1)
    rows = ch.label_rows(data)
    assert len(rows) == len(orders.LABELS) == 7
    assert sum(r[2] for r in rows) == pytest.approx(100.0)
    assert "不要" in rows[0][1] and "别放" in rows[0][1]


def test_frequency_loss_is_the_entropy_on_the_same_orders():
    data = orders.generate(200, seed=1)
    freq = ch.frequency_loss(data, data)
    counts = orders.stats(data)
    shares = [counts[f"share_{lab}"] for lab in orders.LABELS]
    assert freq == pytest.approx(-sum(p * math.log(p) for p in shares if p))
    assert freq < math.log(7)


def test_diagram_is_sized_from_the_model_config():
    model = ch.book_model()
    fig = ch.model_diagram(model)
    text = " ".join(figure_texts(fig))
    c = model.config
    assert c.d_model == MODEL.d_model
    assert f"{c.d_model} → {c.d_ff} → {c.d_model}" in text
    assert f"{c.n_heads} heads, d_k = {c.d_model // c.n_heads}" in text
    assert f"{sum(p.numel() for p in model.parameters()):,} parameters" in text
    assert f"× {c.n_layers}" in text


def test_parameter_rows_add_up():
    model = ch.book_model()
    rows = ch.parameter_rows(model)
    assert rows[-1][1] == sum(p.numel() for p in model.parameters())
    assert sum(n for _, n in rows[:-1]) == rows[-1][1]
    assert all(n > 0 for _, n in rows)
    counts = ch.parameter_counts(model)   # what the lesson's cell reads, by part
    assert [n for _, n in rows] == list(counts.values())
    assert counts["attn"] == sum(p.numel() for b in model.blocks for p in b.attn.parameters())
    assert counts["ff"] == sum(p.numel() for b in model.blocks for p in b.ff.parameters())


def test_loss_verdicts_follow_the_numbers():
    assert ch.loss_verdicts(1.5, 1.9, 0.1) == {"freq_vs_chance": "lower than",
                                                "trained_vs": "far below both"}
    assert ch.loss_verdicts(2.0, 1.9, 1.2) == {"freq_vs_chance": "not lower than",
                                                "trained_vs": "not below both"}


def test_feed_forward_works_on_each_token_alone():
    change = ch.per_token_test()
    assert change["ff"] == 0.0
    assert change["attention"] > 0.1
    with pytest.raises(ValueError, match="token"):
        ch.per_token_test(token=9, length=6)
    with pytest.raises(TypeError, match="TinyEncoder"):
        ch.model_diagram("model")


# --- figures as a screen reader meets them (issue 47) ---------------------------------------

@pytest.mark.parametrize("language", ["en", "zh"])
def test_model_diagram_is_described_with_the_models_sizes(language):
    from book.face.figures import described
    from book.kit import i18n

    i18n.set_language(language)
    try:
        model = ch.book_model()
        alt, caption = described(ch.model_diagram(model).to_dict())
    finally:
        i18n.set_language("en")
    n_params = sum(p.numel() for p in model.parameters())
    c = model.config
    if language == "en":
        assert f"{n_params:,} parameters" in caption
    else:
        assert f"约 {n_params / 10_000:.1f} 万个参数" in caption   # wan, never thousands
    assert f"{c.d_model} → {c.d_ff} → {c.d_model}" in caption
    assert f"d_k = {c.d_model // c.n_heads}" in caption and str(c.n_layers) in alt


# --- issue 49: the residual connections drawn as arrows around the sub-layers ---------------

@pytest.mark.parametrize("language", ["en", "zh"])
def test_model_diagram_draws_the_residual_connections(language):
    """The book's model (Pre-LN): one residual line around attention, one around the
    feed-forward layer, each ending in an arrowhead at its '+', the word 'residual' along it;
    the alt and the caption say so."""
    import re

    from book.face import diagrams
    from book.face.figures import DIAGRAM_WORDS, described
    from book.kit import i18n

    i18n.set_language(language)
    try:
        model = ch.book_model()
        fig = ch.model_diagram(model)
        alt, caption = described(fig.to_dict())
        attention = i18n.tr("common.dg_toy_attention", h=model.config.n_heads,
                            d_k=model.config.d_model // model.config.n_heads)
        ff = i18n.tr("common.dg_toy_ff", d=model.config.d_model, d_ff=model.config.d_ff)
        residual, add = i18n.tr("common.dg_residual"), i18n.tr("common.dg_add")
    finally:
        i18n.set_language("en")
    assert model.config.norm == "pre"
    boxes = {a.text: a.y for a in fig.layout.annotations if a.text and not a.xshift}
    sums = sorted(a.y for a in fig.layout.annotations if a.text == add)[1:]  # not the embeddings'
    paths = [s for s in fig.layout.shapes if s.name == diagrams.RESIDUAL]
    heads = [a for a in fig.layout.annotations if a.name == diagrams.RESIDUAL and a.showarrow]
    assert len(paths) == len(heads) == len(sums) == 2
    for path, sub_layer, y_add, head in zip(paths, (attention, ff), sums, heads, strict=True):
        ys = [float(y) for y in re.findall(r",([\d.]+)", path.path)]
        assert min(ys) < boxes[sub_layer] < max(ys) == pytest.approx(y_add)
        assert head.y == pytest.approx(y_add)
    assert sum(a.text == residual for a in fig.layout.annotations) == 2
    assert fig.layout.meta[DIAGRAM_WORDS].count(residual) == 2   # the page's words list
    word = "residual connection" if language == "en" else "残差连接"
    assert word in alt and word in caption
