"""book.toy.train: the tiny encoder, its training loop and the tools to open a trained model.

Short runs only (a few steps of a tiny model); the ≥ 95 % / ≤ 20 s target is measured by
``book.toy.train.benchmark()`` (see tests/bench_train.py), not here.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tolerance import assert_same_run

from book.toy import orders as O
from book.toy import probe as P
from book.toy import train
from book.toy import train as T
from book.toy.fit import fit
from book.toy.model import INITS, NORMS, TinyEncoder

TINY = {"d_model": 16, "n_heads": 2, "n_layers": 2}


pytestmark = pytest.mark.usefixtures("one_thread")  # see conftest.py


@pytest.fixture(scope="module")
def data():
    return O.train_test_split(O.generate(300, seed=11), 0.2, seed=11)


@pytest.fixture(scope="module")
def trained(data):
    """A tiny model after a short run (fast; far from accurate)."""
    model = TinyEncoder(**TINY)
    fit(model, data[0], steps=40, batch_size=32, lr=1e-2, progress=False)
    return model


def test_fit_lowers_the_loss_and_repeats_with_the_same_seed(data):
    train, test = data
    runs = []
    for _ in range(2):
        model = TinyEncoder(**TINY, seed=3)
        runs.append(fit(model, train, test, steps=40, batch_size=32, lr=1e-2, seed=5,
                          progress=False))
    first, second = runs
    assert np.mean(first.loss[-5:]) < 0.8 * np.mean(first.loss[:5])
    assert first.loss == second.loss
    assert first.test_accuracy == second.test_accuracy
    assert first.steps == 40 and not first.diverged
    assert first.test_steps == [40] and 0.0 <= first.final_accuracy <= 1.0
    assert first.wall_time > 0
    other = fit(TinyEncoder(**TINY, seed=3), train, steps=5, batch_size=32, seed=6,
                  progress=False)
    assert other.loss != first.loss[:5]


def test_same_seed_same_initial_weights_and_global_rng_untouched():
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a = TinyEncoder(**TINY, seed=1)
    after = torch.rand(1)
    # building a model does not consume the global RNG: the same state draws the same number
    assert_same_run(before, after, why="the global RNG state is untouched")
    b = TinyEncoder(**TINY, seed=1)
    c = TinyEncoder(**TINY, seed=2)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert_same_run(pa, pb, why="the same seed, the same initialisation twice")
    assert not torch.equal(a.embed.weight, c.embed.weight)  # other seed: other draws


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("init", INITS)
def test_every_norm_and_init_builds_and_runs(norm, init, data):
    model = TinyEncoder(**TINY, norm=norm, init=init)
    batch = O.collate(data[0][:4])
    logits = model(batch.ids, batch.padding_mask)
    assert logits.shape == (*batch.ids.shape, len(O.LABELS))
    assert bool(torch.isfinite(logits).all())
    history = fit(model, data[0], steps=2, batch_size=8, progress=False)
    assert len(history.loss) == 2


def test_large_init_makes_bigger_activations_than_xavier(data):
    batch = O.collate(data[0][:8])
    sizes = {}
    for init in ("xavier", "large"):
        model = TinyEncoder(**TINY, norm="none", init=init)
        with torch.no_grad():
            sizes[init] = float(model(batch.ids, batch.padding_mask).std())
    assert sizes["large"] > 10 * sizes["xavier"]


def test_sdpa_and_scratch_attention_agree(data):
    batch = O.collate(data[0][:6])
    a = TinyEncoder(**TINY, attention="sdpa", seed=4)
    b = TinyEncoder(**TINY, attention="scratch", seed=4)
    torch.testing.assert_close(a(batch.ids, batch.padding_mask), b(batch.ids, batch.padding_mask),
                               atol=1e-5, rtol=1e-4)


def test_padding_does_not_change_a_sequence_output(trained, data):
    orders = data[1][:5]
    batch = O.collate(orders, pad_to=O.MAX_LEN)
    with torch.no_grad():
        together = trained(batch.ids, batch.padding_mask)
        for row, order in enumerate(orders):
            alone = trained(torch.tensor([order.ids]))
            torch.testing.assert_close(together[row, :len(order)], alone[0], atol=1e-5,
                                       rtol=1e-4)


def test_attention_maps_shape_and_rows(trained, data):
    order = data[1][0]
    maps = P.attention_maps(trained, order)
    n = len(order)
    assert maps.shape == (TINY["n_layers"], TINY["n_heads"], n, n)
    np.testing.assert_allclose(maps.sum(-1), 1.0, atol=1e-5)
    assert P.attention_maps(trained, "一碗牛肉面，不要香菜，多加辣").shape[-1] == 8
    # in a padded batch, every real query spreads its weight over real keys only
    batch = O.collate(data[1][:4])
    with torch.no_grad():
        _, weights = trained(batch.ids, batch.padding_mask, need_weights=True)
    assert len(weights) == TINY["n_layers"]
    real = batch.padding_mask
    for w in weights:
        assert w.shape == (4, TINY["n_heads"], *batch.ids.shape[1:], batch.ids.shape[1])
        on_real = (w * real[:, None, None, :]).sum(-1)
        torch.testing.assert_close(on_real[real[:, None, :].expand_as(on_real)],
                                   torch.ones(int(real.sum()) * TINY["n_heads"]))


def test_attention_entropy_bounds_and_uniform_heads(trained, data):
    test = data[1]
    ent = P.attention_entropy(trained, test)
    assert ent.shape == (TINY["n_layers"], TINY["n_heads"])
    assert (ent >= 0).all() and (ent <= np.log(O.MAX_LEN)).all()
    norm = P.attention_entropy(trained, test, normalize=True)
    assert (norm <= 1 + 1e-9).all()
    # zero query weights → every score is 0 → uniform rows → normalised entropy exactly 1
    flat = TinyEncoder(**TINY)
    with torch.no_grad():
        for block in flat.blocks:
            block.attn.w_q.weight.zero_()
            block.attn.w_q.bias.zero_()
    np.testing.assert_allclose(P.attention_entropy(flat, test, normalize=True), 1.0, atol=1e-6)


def test_head_ablation_changes_the_output_and_restores_it(trained, data):
    batch = O.collate(data[1][:4])
    with torch.no_grad():
        before = trained(batch.ids, batch.padding_mask)
        with P.ablated(trained, layer=1, head=0):
            cut = trained(batch.ids, batch.padding_mask)
        after = trained(batch.ids, batch.padding_mask)
    assert not torch.allclose(before, cut)
    assert_same_run(before, after, why="the restored model runs the same computation again")
    result = P.head_ablation(trained, data[1], layer=0, head=1)
    assert set(result) == {"accuracy", "loss", "base_accuracy", "base_loss", "accuracy_drop"}
    assert result["accuracy_drop"] == pytest.approx(result["base_accuracy"] - result["accuracy"])
    table = P.ablation_table(trained, data[1][:20])
    assert table.shape == (TINY["n_layers"], TINY["n_heads"])
    with pytest.raises(ValueError, match="at most 1"):
        P.head_ablation(trained, data[1], layer=2, head=0)
    with pytest.raises(ValueError, match="at most 1"):
        with P.ablated(trained, layer=0, head=5):
            pass


def test_evaluate_predict_and_accuracy(trained, data):
    result = P.evaluate(trained, data[1])
    assert set(result) == {"loss", "accuracy", "ingredient_accuracy", "dish_accuracy", "tokens"}
    assert result["accuracy"] == P.accuracy(trained, data[1])
    assert result["tokens"] == sum(lab != O.NONE for o in data[1] for lab in o.labels)
    labels = P.predict(trained, "一碗牛肉面，不要香菜，多加辣")
    assert len(labels) == 8
    assert labels[1] in O.DISH_LABELS and labels[4] in O.INGREDIENT_LABELS
    assert labels[0] == labels[2] == O.NONE
    assert P.predict(trained, ["香菜", "不要"])[1] == O.NONE


def test_record_norms(data):
    model = TinyEncoder(**TINY)
    history = fit(model, data[0], steps=6, batch_size=16, record_norms=True, record_every=2,
                    progress=False)
    assert history.norm_steps == [1, 3, 5]
    assert list(history.activation_rms) == ["embedding", "layer 0", "layer 1"]
    for name in history.activation_rms:
        assert len(history.activation_rms[name]) == len(history.grad_norm[name]) == 3
        assert all(v > 0 for v in history.grad_norm[name])
    assert not model.training   # fit leaves the model in eval mode
    assert history.as_dict()["config"]["steps"] == 6


@pytest.mark.parametrize("where", ["embed", "head"])
def test_non_finite_values_stop_training(data, where):
    # NaN in the embedding: the attention layer refuses its input; in the head: NaN loss
    model = TinyEncoder(**TINY)
    with torch.no_grad():
        getattr(model, where).weight.fill_(float("nan"))
    history = fit(model, data[0], data[1], steps=5, batch_size=8, progress=False)
    assert history.diverged and history.steps == 1 and history.final_accuracy is None
    assert np.isnan(history.loss[0])


def test_sdpa_model_still_returns_attention_maps(data):
    order = data[1][0]
    fused = TinyEncoder(**TINY, attention="sdpa", seed=8)
    scratch = TinyEncoder(**TINY, attention="scratch", seed=8)
    np.testing.assert_allclose(P.attention_maps(fused, order), P.attention_maps(scratch, order),
                               atol=1e-6)


def test_progress_bar_runs(data, capsys, monkeypatch):
    monkeypatch.delenv("BOOK_BUILD", raising=False)   # a reader's kernel or terminal
    fit(TinyEncoder(**TINY), data[0], steps=3, batch_size=8, progress=True)
    assert "training" in capsys.readouterr().err


def test_no_progress_bar_in_the_build(data, capsys, monkeypatch):
    """In the build's kernels a bar would show only where the model was trained, not where the
    other edition loaded it (book.kit.memo): the pages would depend on which edition ran first."""
    monkeypatch.setenv("BOOK_BUILD", "1")
    fit(TinyEncoder(**TINY), data[0], steps=3, batch_size=8, progress=True)
    assert capsys.readouterr().err == ""


def test_save_and_load_round_trip(trained, tmp_path, data):
    path = T.save(trained, tmp_path / "tiny.pt")
    again = T.load(path)
    batch = O.collate(data[1][:3])
    with torch.no_grad():
        assert_same_run(trained(batch.ids, batch.padding_mask),
                        again(batch.ids, batch.padding_mask),
                        why="saved and loaded: the same weights, the same computation")
    with pytest.raises(FileNotFoundError, match="train_default"):
        T.load(tmp_path / "missing.pt")


def test_bad_inputs_say_what_to_do(trained, data):
    with pytest.raises(ValueError, match="not divisible by n_heads"):
        TinyEncoder(d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="not one of"):
        TinyEncoder(norm="middle")
    with pytest.raises(ValueError, match="not one of"):
        TinyEncoder(init="huge")
    with pytest.raises(ValueError, match="not one of"):
        TinyEncoder(attention="flash")
    with pytest.raises(TypeError, match="TinyEncoder"):
        fit(torch.nn.Linear(2, 2), data[0])
    with pytest.raises(ValueError, match="at least 1"):
        fit(trained, data[0], steps=0)
    with pytest.raises(TypeError, match="list of Order"):
        fit(trained, "一碗牛肉面")
    with pytest.raises(ValueError, match="max_len"):
        fit(TinyEncoder(**TINY, max_len=5), data[0], steps=1)
    with pytest.raises(TypeError, match="torch.long"):
        trained(torch.zeros(1, 3))
    with pytest.raises(ValueError, match="max_len"):
        trained(torch.ones(1, 65, dtype=torch.long))
    with pytest.raises(ValueError, match="vocabulary"):
        trained(torch.full((1, 3), 999, dtype=torch.long))
    with pytest.raises(ValueError, match="not a word"):
        P.predict(trained, "一碗炸鸡")
    with pytest.raises(TypeError, match="order must be"):
        P.attention_maps(trained, 42)
    with pytest.raises(ValueError, match="unknown setting"):
        T.train_default(progress=False, learning_rate=1.0)
    with pytest.raises(ValueError, match="padding"):
        # a fully padded row leaves its queries nothing to attend to
        trained(torch.tensor([[0, 0]]), torch.tensor([[False, False]]))


def test_shipped_checkpoint_loads_and_matches_the_defaults():
    model = T.pretrained()
    meta = T.checkpoint_meta()
    assert {k: model.config[k] for k in T.MODEL if k != "seed"} == {
        k: v for k, v in T.MODEL.items() if k != "seed"}
    assert meta["fit"] == T.FIT and meta["data"] == T.DATA and meta["model"] == T.MODEL
    assert meta["accuracy"] >= 0.95
    order = "两碗牛肉面，不要香菜，多加辣"
    assert P.predict(model, order) == list(O.Order.from_text(order).labels)


@pytest.mark.slow
def test_training_code_reproduces_the_shipped_checkpoint():
    """Retrains the default model (about 10 s): same held-out accuracy, same predictions."""
    shipped, meta = T.pretrained(), T.checkpoint_meta()
    model, history = T.train_default(progress=False, threads=meta["threads"])
    assert history.final_accuracy == pytest.approx(meta["accuracy"], abs=0.005)
    _, test = T.default_data()
    batch = O.collate(test)
    scored = batch.labels != O.IGNORE_INDEX
    with torch.no_grad():
        mine = model(batch.ids, batch.padding_mask).argmax(-1)[scored]
        theirs = shipped(batch.ids, batch.padding_mask).argmax(-1)[scored]
    assert float((mine == theirs).float().mean()) >= 0.99


def test_a_missing_checkpoint_is_a_file_not_found_error():
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        train.load("/nonexistent/model.pt")
