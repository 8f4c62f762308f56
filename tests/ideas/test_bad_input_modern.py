"""Bad input to every public function of chapter 11's idea modules (positions, gqa, flash, mla)
and of chapter 8b's (pretrained, head_stats): a clear error that names the argument, never NaN.

The kinds of argument and the property test are those of tests/ideas/test_bad_input.py (imported
from it); this file only lists the cases, so the two lists grow without touching each other.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from test_bad_input import (
    EXAMPLES,
    NOT_MODEL,
    Array,
    Bool,
    Choice,
    Int,
    Mask,
    Real,
    Tensor,
    Thing,
    _has_nan,
    case,
    check_bad_call,
)

from book.ideas import flash, gqa, mla, positions
from book.ideas.mha import MultiHeadSelfAttention
from book.real import head_stats, pretrained
from book.toy import variants

CALLS: Counter = Counter()
GEN = torch.Generator().manual_seed(0)
X3 = torch.randn(2, 5, 8, generator=GEN)
X64 = X3.double()
QKV = [torch.randn(1, 2, 6, 4, generator=GEN) for _ in range(3)]
Q1, K1 = torch.randn(8, generator=GEN), torch.randn(8, generator=GEN)
LAYER = MultiHeadSelfAttention(8, 2)
GQA = gqa.GroupedQueryAttention(8, 4, 2)
ROPE = positions.RopeSelfAttention(8, 2)
MLA = mla.LatentAttention(8, 2, 4)
C = MLA.latent(X3).detach()
CAUSAL5 = torch.tril(torch.ones(5, 5, dtype=torch.bool))
SCORES, VALUES = flash.example_row(8, seed=0)
GRID = positions.score_grid(Q1, K1, 6)
NOT_PATH = [3, None, [1], 2.5]

CASES = [
    # positions
    case("positions.permutation_gap", positions.permutation_gap,
         {"layer": LAYER, "x": X3, "perm": [1, 0, 2, 3, 4]},
         layer=Thing([None, 3, "layer"]), x=Tensor(ndim=3),
         perm=Thing([[0, 0, 1, 2, 3], [0, 1], "01234", [0, 1, 2, 3, 5], None])),
    case("positions.sinusoidal_table", positions.sinusoidal_table, {"n": 4, "d": 8},
         n=Int(1), d=Int(2), base=Real(1.0, none_ok=False)),
    case("positions.SinusoidalPositions", positions.SinusoidalPositions,
         {"max_len": 4, "d_model": 8}, max_len=Int(1), d_model=Int(2)),
    case("positions.rope_angles", positions.rope_angles, {"positions": [0, 1, 2], "d": 8},
         positions=Thing([None, "abc", [[0, 1]], [0.5, 1.5], [math.nan]]), d=Int(2),
         base=Real(1.0)),
    case("positions.rope", positions.rope, {"x": X3},
         names={"positions": ["position"]}, x=Tensor(min_ndim=2),
         positions=Thing([[0, 1], "abc", [[0, 1, 2, 3, 4]]]), base=Real(1.0)),
    case("positions.score_grid", positions.score_grid, {"q": Q1, "k": K1, "n": 6},
         q=Tensor(ndim=1), k=Tensor(ndim=1), n=Int(1, 4096), kind=Choice(("rope", "sinusoidal",
                                                                           "none"))),
    case("positions.relative_spread", positions.relative_spread, {"scores": GRID},
         scores=Tensor(ndim=2)),
    case("positions.RopeSelfAttention", positions.RopeSelfAttention,
         {"d_model": 8, "n_heads": 2}, names={"d_model": ["d_model", "d_k"]},
         d_model=Int(1), n_heads=Int(1), dropout=Real(0.0, 1.0)),
    case("positions.RopeSelfAttention.forward", ROPE, {"x": X3},
         x=Tensor(ndim=3), mask=Mask(ref=CAUSAL5)),
    case("variants.positional_encoder", variants.positional_encoder,
         {"kind": "rope", "d_model": 8, "n_heads": 2, "n_layers": 1},
         kind=Choice(positions.KINDS), n_layers=Int(1)),
    # gqa
    case("gqa.valid_kv_heads", gqa.valid_kv_heads, {"n_heads": 8}, n_heads=Int(1)),
    case("gqa.check_groups", gqa.check_groups, {"n_heads": 8, "n_kv_heads": 2},
         n_heads=Int(1), n_kv_heads=Thing([3, 0, -1, 2.5, "2", None, 16])),
    case("gqa.kv_head_of", gqa.kv_head_of, {"query_head": 3, "n_heads": 8, "n_kv_heads": 2},
         query_head=Int(0, 7), n_heads=Int(1), n_kv_heads=Thing([3, 0, 2.5, None])),
    case("gqa.GroupedQueryAttention", gqa.GroupedQueryAttention,
         {"d_model": 8, "n_heads": 4, "n_kv_heads": 2},
         names={"d_model": ["d_model", "d_k"]}, d_model=Int(1), n_heads=Int(1),
         n_kv_heads=Thing([3, 0, 2.5, "2"])),
    case("gqa.GroupedQueryAttention.forward", GQA, {"x": X3},
         x=Tensor(ndim=3), mask=Mask(ref=CAUSAL5)),
    case("gqa.from_mha", gqa.from_mha, {"layer": LAYER, "n_kv_heads": 1},
         layer=Thing(NOT_MODEL), n_kv_heads=Thing([3, 0, 2.5, "1"]), sdpa=Bool()),
    case("gqa.kv_cache_bytes", gqa.kv_cache_bytes,
         {"n_layers": 2, "n_tokens": 8, "n_kv_heads": 2, "d_head": 4},
         n_layers=Int(1), n_tokens=Int(0), n_kv_heads=Int(1), d_head=Int(1),
         bytes_per_number=Int(1)),
    case("gqa.tensor_bytes", gqa.tensor_bytes, {"caches": [[torch.ones(1, 2, 3, 4)] * 2]},
         caches=Thing([None, 3, "kv", [[1, 2]], [[torch.ones(2)]]])),
    case("gqa.GQADecoder", gqa.GQADecoder,
         {"vocab_size": 16, "d_model": 8, "n_heads": 2, "n_kv_heads": 1, "n_layers": 1},
         names={"d_model": ["d_model", "d_k"]}, vocab_size=Int(2), d_model=Int(1),
         n_heads=Int(1), n_kv_heads=Thing([0, 3, 2.5, "1"]), n_layers=Int(1)),
    case("gqa.decode_times", gqa.decode_times,
         {"n_kv_list": [1], "prompt_len": 4, "n_new": 2, "d_model": 16, "n_heads": 2,
          "n_layers": 1, "repeats": 1},
         names={"n_kv_list": ["n_kv"]}, n_kv_list=Thing([[], [3], [0], "1", None, [2.5]]),
         prompt_len=Int(1), n_new=Int(1), repeats=Int(1)),
    case("variants.gqa_encoder", variants.gqa_encoder,
         {"n_kv_heads": 1, "n_layers": 1, "d_model": 8, "n_heads": 2},
         n_kv_heads=Thing([0, 3, 2.5, "1", None]), position=Choice(positions.KINDS)),
    # flash
    case("flash.tiled_attention", flash.tiled_attention,
         {"q": QKV[0], "k": QKV[1], "v": QKV[2], "tile": 2},
         names={"causal": ["causal"]}, q=Tensor(min_ndim=2), k=Tensor(min_ndim=2),
         v=Tensor(min_ndim=2), tile=Int(1), causal=Bool()),
    case("flash.row_trace", flash.row_trace, {"scores": SCORES, "values": VALUES, "tile": 3},
         scores=Array((1,)), values=Array((2,)), tile=Int(1)),
    case("flash.example_row", flash.example_row, {"n_keys": 8},
         n_keys=Int(1), d_v=Int(1), seed=Int(0), spread=Real(0.0)),
    case("flash.memory_sweep", flash.memory_sweep, {"ns": [16], "tile": 8},
         names={"ns": ["ns", "n"]}, ns=Thing([[], [0], "16", None, [2.5]]), tile=Int(1),
         d=Int(1), heads=Int(1), seed=Int(0)),
    # mla
    case("mla.LatentAttention", mla.LatentAttention,
         {"d_model": 8, "n_heads": 2, "d_latent": 4}, names={"d_model": ["d_model", "d_k"]},
         d_model=Int(1), n_heads=Int(1), d_latent=Int(1), dropout=Real(0.0, 1.0)),
    case("mla.LatentAttention.latent", MLA.latent, {"x": X3}, x=Tensor(ndim=3)),
    case("mla.LatentAttention.forward", MLA, {"x": X3}, x=Tensor(ndim=3),
         mask=Mask(ref=CAUSAL5)),
    case("mla.LatentAttention.attend_absorbed", MLA.attend_absorbed, {"x": X3, "c": C},
         x=Tensor(ndim=3), c=Tensor(ndim=3), mask=Mask(ref=CAUSAL5)),
    case("mla.from_mha", mla.from_mha, {"layer": LAYER, "d_latent": 4},
         layer=Thing(NOT_MODEL), d_latent=Int(1, 16, none_ok=True)),
    case("mla.latent_cache_bytes", mla.latent_cache_bytes,
         {"n_layers": 1, "n_tokens": 4, "d_latent": 8},
         n_layers=Int(1), n_tokens=Int(0), d_latent=Int(1), bytes_per_number=Int(1)),
]


try:
    MODEL = pretrained.load()
except ModuleNotFoundError:   # the reader's install without the pretrained model
    MODEL = None


def _pretrained_cases(model):
    if model is None:
        return []
    maps = head_stats.all_maps(model, ["the cat sat", "a dog ran"])
    shares = head_stats.token_shares(maps)
    pairs = head_stats.labelled_pairs(model)
    sentence_maps = head_stats.all_maps(model, head_stats.SENTENCES)
    folder = pretrained.model_dir()
    tensors_ok = {"x": 1}
    return [
        case("pretrained.model_dir", pretrained.model_dir, {"path": folder},
             path=Thing([3, [1], 2.5])),
        case("pretrained.sha256", pretrained.sha256, {"file": folder / "config.json"},
             file=Thing(NOT_PATH)),
        case("pretrained.verify", pretrained.verify, {"file": folder / "model.safetensors"},
             file=Thing(NOT_PATH), expected=Thing([3, None, "abc", "g" * 64])),
        case("pretrained.BertConfig.from_json", pretrained.BertConfig.from_json,
             {"file": folder / "config.json"},
             file=Thing(NOT_PATH + [folder / "model.safetensors"])),
        case("pretrained.ReferenceAttention", pretrained.ReferenceAttention,
             {"d_model": 8, "n_heads": 2}, names={"d_model": ["d_model", "d_k"]},
             d_model=Int(1), n_heads=Int(1)),
        case("pretrained.BertLayer", pretrained.BertLayer,
             {"config": pretrained.BertConfig(d_model=8, n_heads=2, d_ff=16),
              "attention": LAYER}, config=Thing([None, 3, {"d_model": 8}]),
             attention=Thing([None, 3, "book"])),
        case("pretrained.BertEncoder", pretrained.BertEncoder, {},
             config=Thing([None, 3, {"d_model": 8}]),
             attention=Choice(("book", "reference"))),
        case("pretrained.BertEncoder.forward", model.encoder,
             {"ids": torch.tensor([[101, 102]])}, ids=Thing([
                 torch.tensor([[1.0, 2.0]]), torch.tensor([101, 102]), None,
                 torch.zeros(1, 0, dtype=torch.long), torch.tensor([[10**6]])])),
        case("pretrained.checkpoint_state", pretrained.checkpoint_state,
             {"tensors": tensors_ok, "config": pretrained.BertConfig()},
             tensors=Thing([None, 3, {}]), config=Thing([None, 3]),
             attention=Choice(("book", "reference"))),
        case("pretrained.book_attention", pretrained.book_attention,
             {"encoder": model.encoder}, encoder=Thing(NOT_MODEL)),
        case("pretrained.load", pretrained.load, {},
             path=Thing([3, [1]]),
             attention=Choice(("book", "reference")), check=Bool()),
        case("pretrained.labels", pretrained.labels,
             {"tokens": model.tokenize("a cat").tokens},
             tokens=Thing([None, 3, "a cat", [1, 2]])),
        case("pretrained.SentenceModel.tokenize", model.tokenize, {"text": "a cat"},
             text=Thing([None, 3, "", ["a"], "word " * 600])),
        case("pretrained.SentenceModel.batch", model.batch, {"texts": ["a cat"]},
             texts=Thing([None, 3, [], [3], [""]])),
        case("pretrained.SentenceModel.hidden", model.hidden, {"texts": ["a cat"]},
             texts=Thing([None, 3, [], [3]])),
        case("pretrained.SentenceModel.embed", model.embed, {"texts": ["a cat"]},
             texts=Thing([None, 3, [], [3]])),
        case("pretrained.SentenceModel.similarity", model.similarity,
             {"a": "a cat", "b": "a dog"}, a=Thing([None, 3, ""]), b=Thing([None, 3, ""])),
        case("pretrained.SentenceModel.attention", model.attention, {"text": "a cat"},
             text=Thing([None, 3, "", ["a"]])),
        case("pretrained.SentenceModel.attention_many", model.attention_many,
             {"texts": ["a cat"]}, texts=Thing([None, 3, [], [3]])),
        case("pretrained.view_data", pretrained.view_data, {"model": model, "text": "a cat"},
             model=Thing(NOT_MODEL), text=Thing([None, 3, ""])),
        case("pretrained.WeightEdit", pretrained.WeightEdit, {"heads": [0, 1]},
             names={"key_heads": ["key_heads", "keys"]},
             heads=Thing([3, "0,1", [(0,)], [(0.5, 1)]]), keys=Thing([3, "cls", [1.5]]),
             key_heads=Thing([3, "x"])),
        case("pretrained.edited_attention",
             lambda **kw: pretrained.edited_attention(**kw).__enter__(),
             {"model": model, "heads": [(0, 1)]}, model=Thing(NOT_MODEL),
             heads=Thing([3, [(99, 0)], [(0, 99)], [(0,)], "0"]),
             keys=Thing([3, "cls"])),
        case("pretrained.uniform_entropy", pretrained.uniform_entropy, {"n": 4}, n=Int(1)),
        # head_stats
        case("head_stats.parse", head_stats.parse, {"marked": "[the] {cat} sat"},
             marked=Thing([None, 3, ["[the] {cat}"], "[the] {cat", "[the cat"])),
        case("head_stats.all_maps", head_stats.all_maps,
             {"model": model, "sentences": ["a cat"]},
             model=Thing(NOT_MODEL), sentences=Thing([None, "a cat", [], [3]])),
        case("head_stats.token_shares", head_stats.token_shares, {"maps": maps},
             maps=Thing([None, [], 3, [{"x": 1}], "maps"])),
        case("head_stats.per_layer", head_stats.per_layer, {"shares": shares},
             shares=Thing([None, 3, {}, {"[CLS]": 3}])),
        case("head_stats.positional_heads", head_stats.positional_heads, {"shares": shares},
             shares=Thing([None, 3, {}]), threshold=Real(0.0, 1.0)),
        case("head_stats.entropies", head_stats.entropies, {"maps": maps},
             maps=Thing([None, [], 3, [{"x": 1}]])),
        case("head_stats.word_map", head_stats.word_map, {"d": maps[0]},
             names={"d": ["d", "map"]}, d=Thing([None, 3, {}, {"weights": 1}])),
        case("head_stats.labelled_pairs", head_stats.labelled_pairs, {"model": model},
             model=Thing(NOT_MODEL), marked=Thing([3, "a cat", [3], []])),
        case("head_stats.relation_accuracy", head_stats.relation_accuracy,
             {"pairs": pairs, "maps": sentence_maps},
             pairs=Thing([None, [], 3, [{"x": 1}]]), maps=Thing([None, [], 3, maps]),
             offsets=Thing([None, [], [0], [1.5], "1"]), sentences=Thing([3, [-1], [10**6],
                                                                          "0"])),
        case("head_stats.held_out_head", head_stats.held_out_head,
             {"pairs": pairs, "maps": sentence_maps},
             pairs=Thing([None, [], 3]), maps=Thing([None, [], 3, maps])),
        case("head_stats.coreference_flip", head_stats.coreference_flip, {"model": model},
             model=Thing(NOT_MODEL), pair=Thing([3, "it", ("a",), ("a", "b")])),
        case("head_stats.sink_test", head_stats.sink_test,
             {"model": model, "sentences": ["a cat"]},
             model=Thing(NOT_MODEL), sentences=Thing([None, "a cat", [], [3]])),
        case("head_stats.head_ablation", head_stats.head_ablation,
             {"model": model, "sentences": ["a cat"], "heads": [(0, 1)]},
             model=Thing(NOT_MODEL), sentences=Thing([None, "a cat", [], [3]]),
             heads=Thing([None, 3, [(99, 0)], "0"])),
        case("head_stats.sink_heads", head_stats.sink_heads, {"shares": shares},
             shares=Thing([None, 3, {}]), kinds=Thing([3, ["nope"], "[CLS]"]),
             threshold=Real(0.0, 1.0)),
        case("head_stats.ranked_heads", head_stats.ranked_heads,
             {"mass": np.ones((2, 3))}, mass=Array((2,))),
    ]


PRETRAINED = _pretrained_cases(MODEL)

@pytest.mark.parametrize("c", CASES + PRETRAINED, ids=lambda c: c.name)
@EXAMPLES
@given(data=st.data())
def test_bad_input_raises_a_clear_error(c, data, one_thread):
    check_bad_call(c, data, CALLS)


def test_valid_calls_work():
    heavy = {"gqa.decode_times", "flash.memory_sweep", "pretrained.load",
             "pretrained.checkpoint_state", "pretrained.BertEncoder"}
    for c in CASES + PRETRAINED:
        if c.name in heavy:
            continue
        out = c.fn(**c.valid)
        assert not _has_nan(out), c.name


def test_every_public_function_has_a_case():
    import inspect
    named = {c.name.split("(")[0] for c in CASES + PRETRAINED}
    modules = (positions, gqa, flash, mla) + ((pretrained, head_stats) if PRETRAINED else ())
    for module in modules:
        short = module.__name__.split(".")[-1]
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj) or inspect.isclass(obj):
                if inspect.isclass(obj) and issubclass(obj, Exception):
                    continue
                if obj is pretrained.Tokens:  # a record tokenize() returns, not built by hand
                    continue
                assert any(n == f"{short}.{name}" or n.startswith(f"{short}.{name}.")
                           for n in named), f"{short}.{name} has no bad-input case"


@pytest.mark.parametrize("call", [lambda: pretrained.model_dir("/nonexistent-model-folder"),
                                  lambda: pretrained.load("/nonexistent-model-folder"),
                                  lambda: pretrained.sha256("/nonexistent-file")])
def test_a_missing_model_file_is_a_file_not_found_error(call):
    with pytest.raises(FileNotFoundError):
        call()
