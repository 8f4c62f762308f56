"""Bad input to every public function of the idea modules: a clear error, never NaN.

Each case below is one public function (or method) with a valid call and, for each argument,
the *kind* of value it takes. Hypothesis replaces one argument of the valid call with a bad
value of that kind (wrong type, NaN/inf, wrong shape, out-of-range or non-integral number,
float ids, an empty input …) and the call must raise ``ValueError`` or ``TypeError`` whose
message names the argument. A call that returns instead fails the test: bad input must never
come back as NaN or as a silently wrong shape. ``CALLS`` counts the calls made.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from book.face import display
from book.ideas import (
    attention,
    beyond,
    efficient,
    kvcache,
    longctx,
    masks,
    mha,
    norms,
    scaling,
    walkthrough,
)
from book.kit import timing
from book.studies import attention_roles, heads, masktraps, stability
from book.toy import baselines, orders, orders_example, probe, train
from book.toy.fit import fit
from book.toy.model import INITS, NORMS, EncoderBlock, TinyEncoder, eval_mode

EXAMPLES = settings(max_examples=25, deadline=None, derandomize=True)
CALLS: Counter = Counter()   # function → bad calls made (every one raised a clear error)

# ---- the kinds of argument, each with the bad values it must refuse --------------------------

TEXT = st.text(min_size=0, max_size=4)
NON_INTEGRAL = st.floats(allow_nan=True, allow_infinity=True).filter(
    lambda x: not (math.isfinite(x) and x == int(x)))


@dataclass
class _Number:
    """A number argument in [low, high] (None: no bound); ``none_ok``: None is valid there."""
    low: float | None = None
    high: float | None = None
    none_ok: bool = False

    def bad(self, valid):
        parts = self.wrong_kinds()
        if not self.none_ok:
            parts.append(st.none())
        if self.low is not None:
            parts.append(self.below(self.low))
        if self.high is not None:
            parts.append(self.above(self.high))
        return st.one_of(parts)


class Int(_Number):
    def wrong_kinds(self):
        return [NON_INTEGRAL, TEXT, st.booleans(), st.just([1])]

    def below(self, low):
        return st.integers(max_value=low - 1, min_value=low - 10**6)

    def above(self, high):
        return st.integers(min_value=high + 1, max_value=high + 10**6)


class Real(_Number):
    def wrong_kinds(self):
        return [st.sampled_from([math.nan, math.inf, -math.inf]), TEXT, st.booleans()]

    def below(self, low):
        return st.floats(max_value=low, exclude_max=True, min_value=low - 1e6)

    def above(self, high):
        return st.floats(min_value=high, exclude_min=True, max_value=high + 1e6)


@dataclass
class Bool:
    def bad(self, valid):
        return st.one_of(st.integers(), TEXT, st.none(), st.floats())


@dataclass
class Choice:
    options: tuple

    def bad(self, valid):
        return st.one_of(TEXT.filter(lambda s: s not in self.options), st.integers(),
                         st.none())


def _poisoned(a: np.ndarray, data_draw, value):
    a = np.array(a, dtype=np.float64, copy=True)
    flat = a.reshape(-1)
    flat[data_draw(st.integers(0, flat.size - 1))] = value
    return a


@dataclass
class Array:
    """A numpy-like array argument; ``ndim``: the dims it accepts (None: any);
    ``neginf_ok``: -inf is a masked score there."""
    ndim: tuple | None = None
    neginf_ok: bool = False
    torch_in: bool = False     # pass bad values as tensors instead of numpy arrays

    def bad(self, valid):
        valid = np.asarray(valid, dtype=np.float64)

        @st.composite
        def draw_bad(draw):
            which = draw(st.sampled_from(["nan", "inf", "-inf", "empty", "text", "ndim",
                                          "ragged"]))
            if which == "-inf" and self.neginf_ok:
                which = "nan"
            if which == "ndim" and self.ndim is None:
                which = "inf"
            if which in ("nan", "inf", "-inf"):
                out = _poisoned(valid, draw, float(which))
            elif which == "empty":
                out = np.zeros((0,) * max(1, valid.ndim))
            elif which == "text":
                return draw(st.sampled_from(["abc", ["a", "b"]]))
            elif which == "ragged":
                return [[1.0, 2.0], [3.0]]
            else:
                bad_dims = [d for d in range(0, 6) if d not in self.ndim]
                d = draw(st.sampled_from(bad_dims))
                out = valid.reshape(-1)[: max(1, valid.size)]
                out = out.reshape((1,) * (d - 1) + (out.size,)) if d else out[0]
            return torch.as_tensor(out) if self.torch_in else out
        return draw_bad()


@dataclass
class Tensor:
    """A float torch tensor argument; ``min_ndim`` / ``ndim``: the dims it accepts."""
    min_ndim: int = 1
    ndim: int | None = None

    def bad(self, valid: torch.Tensor):
        @st.composite
        def draw_bad(draw):
            which = draw(st.sampled_from(["nan", "inf", "int", "numpy", "empty", "ndim",
                                          "list"]))
            if which in ("nan", "inf"):
                return torch.as_tensor(_poisoned(valid.numpy(), draw, float(which)),
                                       dtype=valid.dtype)
            if which == "int":
                return (valid * 10).to(draw(st.sampled_from([torch.int64, torch.int32,
                                                              torch.bool])))
            if which == "numpy":
                return valid.numpy()
            if which == "list":
                return valid.tolist()
            if which == "empty":
                shape = list(valid.shape)
                shape[draw(st.integers(0, len(shape) - 1))] = 0
                return torch.zeros(shape, dtype=valid.dtype)
            if self.ndim is not None:
                d = draw(st.sampled_from([x for x in range(0, 6) if x != self.ndim]))
            else:
                d = draw(st.integers(0, self.min_ndim - 1))
            flat = valid.reshape(-1)
            return flat[0] if d == 0 else flat.reshape((1,) * (d - 1) + (-1,))
        return draw_bad()


@dataclass
class Ids:
    vocab: int
    ndim: int = 1

    def bad(self, valid):
        @st.composite
        def draw_bad(draw):
            which = draw(st.sampled_from(["float", "high", "negative", "ndim", "empty",
                                          "text", "bool"]))
            v = np.asarray(valid)
            if which == "float":
                return (v + draw(st.floats(0.1, 0.9))).tolist()
            if which == "high":
                out = v.copy()
                out.reshape(-1)[0] = self.vocab + draw(st.integers(0, 100))
                return torch.as_tensor(out)
            if which == "negative":
                out = v.copy()
                out.reshape(-1)[0] = -draw(st.integers(1, 100))
                return out
            if which == "ndim":
                return v.reshape(-1)[0] if self.ndim == 1 and draw(st.booleans()) else \
                    (v[None] if self.ndim == 1 else v.reshape(-1))
            if which == "empty":
                return np.zeros((0,) * self.ndim, dtype=np.int64)
            if which == "bool":
                return torch.as_tensor(v > 0)
            return "一碗牛肉面"
        return draw_bad()


@dataclass
class Mask:
    """A boolean mask argument (True = may attend); ``ref``: a valid mask when the valid call
    passes none."""
    all_false_bad: bool = True
    ref: object = None

    def bad(self, valid):
        valid = torch.as_tensor(self.ref if valid is None else valid)

        @st.composite
        def draw_bad(draw):
            choices = ["float", "int", "text", "shape"] + (["all_false"] if
                                                          self.all_false_bad else [])
            which = draw(st.sampled_from(choices))
            if which == "float":
                return valid.float()
            if which == "int":
                return valid.to(torch.int64).numpy()
            if which == "text":
                return "causal"
            if which == "shape":
                return valid[..., :-1] if valid.shape[-1] > 1 else valid.expand(
                    *valid.shape[:-1], 3)[..., None, :].expand(5, 5, 3)
            out = valid.clone()
            out[..., 0, :] = False
            return out
        return draw_bad()


@dataclass
class Thing:
    """An object argument (a model, orders, a callable …) with its own bad values."""
    values: list

    def bad(self, valid):
        return st.sampled_from(self.values)


NOT_MODEL = [None, "model", torch.nn.Linear(2, 2), 3]
NOT_ORDERS = ["一碗牛肉面", [], [1, 2], None, 3.5, ["一碗"]]
NOT_CALLABLE = [None, 3, "f", [lambda: 1]]


# ---- shared small inputs --------------------------------------------------------------------

GEN = torch.Generator().manual_seed(0)
QKV = [torch.randn(1, 2, 6, 4, generator=GEN) for _ in range(3)]
X3 = torch.randn(2, 5, 8, generator=GEN)
LAYER = mha.MultiHeadSelfAttention(8, 2)
ORDERS = orders.generate(24, seed=0)
TRAIN, TEST = ORDERS[:16], ORDERS[16:]
TINY = dict(d_model=8, n_heads=2, n_layers=1, seed=0)
MODEL = TinyEncoder(**TINY)
DECODER = kvcache.TinyDecoder(vocab_size=16, d_model=8, n_heads=2, n_layers=1, max_len=12)
EX = walkthrough.example()
SCORES_T = torch.randn(4, 4, generator=GEN)
CAUSAL4 = masks.causal_mask(4)


@dataclass
class Case:
    name: str
    fn: object
    valid: dict
    kinds: dict
    names: dict = field(default_factory=dict)   # argument → words its message may use


def case(name, fn, valid, /, names=None, **kinds):
    return Case(name, fn, valid, kinds, names or {})


CASES = [
    # attention
    case("attention.softmax", attention.softmax, {"scores": [[1.0, -math.inf], [0.0, 2.0]]},
         scores=Array(neginf_ok=True), axis=Int(-2, 1)),
    case("attention.softmax(all -inf row)", attention.softmax,
         {"scores": [[1.0, 2.0]]}, names={"scores": ["-inf"]},
         scores=Thing([[[-math.inf, -math.inf]], [[0.0, 1.0], [-math.inf, -math.inf]]])),
    case("attention.entropy", attention.entropy, {"weights": [0.5, 0.5]},
         weights=Array(), axis=Int(-1, 0)),
    case("attention.entropy(not probabilities)", attention.entropy, {"weights": [0.5, 0.5]},
         weights=Thing([[2.0, 2.0], [-0.5, 1.5], [0.1, 0.1]])),
    case("attention.scale_divisor", attention.scale_divisor, {"d_k": 4, "scale": "sqrt"},
         d_k=Int(1), scale=Choice(attention.SCALES)),
    case("attention.scaled_dot_product_attention", attention.scaled_dot_product_attention,
         {"q": np.ones((2, 3)), "k": np.ones((4, 3)), "v": np.ones((4, 5)),
          "mask": np.ones((2, 4), bool)},
         q=Array((2,)), k=Array((2,)), v=Array((2,)), mask=Mask(),
         scale=Choice(attention.SCALES)),
    # masks
    case("masks.causal_mask", masks.causal_mask, {"n": 3}, n=Int(1)),
    case("masks.padding_mask", masks.padding_mask, {"lengths": [2, 3], "n": 4},
         names={"lengths": ["length"]},
         lengths=Thing([[0, 2], [2.5, 1], [], "ab", [[1]], [5, 1], [True, False]]),
         n=Int(3, none_ok=True), side=Choice(("right", "left"))),
    case("masks.as_mask", masks.as_mask, {"mask": CAUSAL4},
         mask=Thing([CAUSAL4.float(), CAUSAL4.long().numpy(), "causal", None, 3,
                     torch.ones(4, dtype=torch.bool), torch.zeros(0, 4, dtype=torch.bool),
                     [[True, 1.5]]])),
    case("masks.combine", masks.combine, {"mask": CAUSAL4, "padding_mask": [[True] * 4]},
         mask=Mask(all_false_bad=False), padding_mask=Mask(all_false_bad=False),
         n_heads=Int(1, none_ok=True)),
    case("masks.fully_masked_rows", masks.fully_masked_rows, {"mask": CAUSAL4},
         mask=Thing([CAUSAL4.float(), "x", torch.zeros(0, 3, dtype=torch.bool)])),
    case("masks.to_torch_attn_mask", masks.to_torch_attn_mask, {"mask": CAUSAL4},
         mask=Thing([CAUSAL4.float(), "x", None]), n_heads=Int(1, none_ok=True)),
    case("masks.to_additive", masks.to_additive, {"mask": CAUSAL4},
         mask=Thing([CAUSAL4.float(), None]), dtype=Thing([torch.int64, "float", 3])),
    case("masks.from_additive", masks.from_additive,
         {"mask": masks.to_additive(CAUSAL4)},
         mask=Thing([torch.full((2, 2), 0.5), CAUSAL4, "x", torch.zeros(0)])),
    case("masks.from_torch_attn_mask", masks.from_torch_attn_mask,
         {"attn_mask": ~CAUSAL4.expand(4, 4, 4).reshape(4, 4, 4), "n_heads": 2},
         attn_mask=Thing([CAUSAL4.float(), None, torch.ones(3, 4, 4, dtype=torch.bool)]),
         n_heads=Int(1)),
    # mha
    case("mha.MultiHeadSelfAttention", mha.MultiHeadSelfAttention,
         {"d_model": 8, "n_heads": 2}, d_model=Int(1), n_heads=Int(1),
         dropout=Real(0.0, 1.0), bias=Bool()),
    case("mha.MultiHeadSelfAttention(n_heads not dividing)", mha.MultiHeadSelfAttention,
         {"d_model": 8, "n_heads": 2}, n_heads=Thing([3, 5, 6, 7, 9])),
    case("mha.MultiHeadSelfAttention.forward", LAYER, {"x": X3},
         x=Tensor(ndim=3), mask=Mask(ref=masks.causal_mask(5)),
         padding_mask=Mask(ref=torch.ones(2, 5, dtype=torch.bool))),
    case("mha.MultiHeadSelfAttentionSDPA.forward",
         mha.MultiHeadSelfAttentionSDPA.from_module(LAYER), {"x": X3},
         x=Tensor(ndim=3), mask=Mask(ref=masks.causal_mask(5)),
         padding_mask=Mask(ref=torch.ones(2, 5, dtype=torch.bool))),
    case("mha.split_heads", LAYER.split_heads, {"t": X3},
         t=Thing([X3[..., :6], X3[0], X3.numpy(), None])),
    case("mha.merge_heads", LAYER.merge_heads, {"t": LAYER.split_heads(X3)},
         t=Thing([X3, LAYER.split_heads(X3)[..., :3], torch.ones(2, 3, 5, 4), None])),
    case("mha.from_torch_mha", mha.from_torch_mha,
         {"mha": torch.nn.MultiheadAttention(8, 2)},
         mha=Thing(NOT_MODEL), cls=Thing([int, "cls", None])),
    case("mha.copy_to_torch_mha", mha.copy_to_torch_mha, {"layer": LAYER},
         layer=Thing(NOT_MODEL), mha=Thing([torch.nn.MultiheadAttention(4, 2), "m", 3])),
    case("mha.trace", mha.trace, {"layer": LAYER, "x": X3}, layer=Thing(NOT_MODEL),
         x=Tensor(ndim=3)),
    case("mha.shape_trace", mha.shape_trace, {}, batch=Int(1), seq=Int(1), d_model=Int(1),
         n_heads=Thing([3, 0, 2.5, "2"]), seed=Int(0)),
    # scaling
    case("scaling.dot_products", scaling.dot_products, {"d_k": 4, "n": 10},
         d_k=Int(1, scaling.MAX_D_K), n=Int(2, 1_000_000), seed=Int(0, 2**40)),
    case("scaling.score_rows", scaling.score_rows, {"d_k": 4, "n_keys": 3, "n_rows": 2},
         d_k=Int(1, scaling.MAX_D_K), n_keys=Int(1, 4096), n_rows=Int(1, 100_000),
         seed=Int(0)),
    case("scaling.saturation", scaling.saturation, {"d_k": 4, "n_keys": 3, "n_rows": 2},
         d_k=Int(1, scaling.MAX_D_K), scale=Choice(attention.SCALES), n_keys=Int(1, 4096),
         seed=Int(0)),
    case("scaling.softmax_jacobian_norm", scaling.softmax_jacobian_norm,
         {"d_k": 4, "n_keys": 3, "n_rows": 2}, d_k=Int(1, scaling.MAX_D_K),
         scale=Choice(attention.SCALES), n_rows=Int(1, 100_000)),
    case("scaling.sweep", scaling.sweep, {"d_ks": [2], "n_keys": 3, "n_rows": 4},
         names={"d_ks": ["d_k"]}, d_ks=Thing([[], [0], [2.5], "12", 3, [10**6]]),
         n_keys=Int(1, 4096), n_rows=Int(2, 100_000)),
    case("scaling.histogram", scaling.histogram, {"values": [0.0, 1.0], "lo": -1, "hi": 1},
         names={"lo": ["lo", "hi"], "hi": ["lo", "hi"]},
         values=Array((1,)), lo=Real(high=1), hi=Real(low=-1), bins=Int(1, 10_000)),
    case("scaling.raw_range", scaling.raw_range, {"d_k": 4}, d_k=Int(1, scaling.MAX_D_K)),
    # walkthrough
    case("walkthrough.example", walkthrough.example, {}, seed=Int(0), n_heads=Int(1, 8),
         d_k=Int(1, 8)),
    case("walkthrough.walkthrough", walkthrough.walkthrough,
         {"X": EX.X, "heads": EX.heads, "W_O": EX.W_O}, names={"heads": ["head", "W_"]},
         X=Array((2,)), W_O=Array((2,)), eps=Real(0.0),
         heads=Thing([[], "QKV", [(EX.X,)], [(EX.W_O, EX.W_O, EX.W_O)], None]),
         mask=Mask(ref=masks.causal_mask(3))),
    case("walkthrough.walkthrough_torch", walkthrough.walkthrough_torch,
         {"X": EX.X, "heads": EX.heads, "W_O": EX.W_O}, X=Array((2,)), W_O=Array((2,)),
         mask=Mask(ref=masks.causal_mask(3)), eps=Real(0.0)),
    case("walkthrough.describe", walkthrough.describe, {"step": "Q1"},
         step=Thing(["Q", "A1_scaled", "X9", 3, None])),
    case("walkthrough.heads_from_module", walkthrough.heads_from_module,
         {"layer": mha.MultiHeadSelfAttention(4, 2, bias=False)},
         layer=Thing(NOT_MODEL + [mha.MultiHeadSelfAttention(4, 2)])),
    # norms
    case("norms.layer_norm", norms.layer_norm, {"x": np.ones((2, 3))}, x=Array((2, 3)),
         eps=Real(0.0)),
    case("norms.batch_norm", norms.batch_norm, {"x": np.ones((2, 3, 4))}, x=Array((3,)),
         eps=Real(0.0)),
    case("norms.sequence_axis_norm", norms.sequence_axis_norm, {"x": np.ones((2, 3, 4))},
         x=Array((3,)), eps=Real(0.0)),
    case("norms.padded_batch", norms.padded_batch,
         {"sentences": [np.ones((2, 3)), np.ones((1, 3))]}, names={"sentences": ["sentence"]},
         sentences=Thing([[], "ab", [np.ones((2, 3)), np.ones((2, 4))], [np.ones(3)],
                          [np.full((2, 3), np.nan)]]), length=Int(2, none_ok=True)),
    case("norms.padding_experiment", norms.padding_experiment, {}, d_model=Int(2, 512),
         seed=Int(0)),
    # orders
    case("orders.gloss", orders.gloss, {"token": "香菜"}, token=Thing(["x", 3, None, ""])),
    case("orders.tokenize", orders.tokenize, {"text": "一碗牛肉面"},
         names={"text": ["text", "read"]}, text=Thing(["", "炸鸡", 3, None, ["一碗"]])),
    case("orders.label", orders.label, {"tokens": ["一碗", "牛肉面"]},
         names={"tokens": ["token", "word", "label takes", "clause"]},
         tokens=Thing(["一碗", [], ["炸鸡"], [3], ["一碗", "两碗"]])),
    case("orders.encode", orders.encode, {"tokens": ["一碗"]},
         names={"tokens": ["token", "word", "encode"]}, tokens=Thing(["一碗", ["炸鸡"]])),
    case("orders.decode", orders.decode, {"ids": [1, 2]}, names={"ids": ["id", "decode"]},
         ids=Thing([[1.5], [-1], [999], torch.zeros(2, 2, dtype=torch.long), [True]])),
    case("orders.generate", orders.generate, {"n_orders": 2}, n_orders=Int(1), seed=Int(0)),
    case("orders.train_test_split", orders.train_test_split, {"orders": ORDERS},
         orders=Thing(NOT_ORDERS), test_fraction=Real(0.0, 1.0), seed=Int(0)),
    case("orders.collate", orders.collate, {"orders": ORDERS}, orders=Thing(NOT_ORDERS),
         pad_to=Int(orders.MAX_LEN + 1, none_ok=True)),
    case("orders.batches", lambda **kw: list(orders.batches(**kw)), {"orders": ORDERS},
         orders=Thing(NOT_ORDERS), batch_size=Int(1), seed=Int(0), shuffle=Bool(),
         drop_last=Bool()),
    case("orders.stats", orders.stats, {"orders": ORDERS}, orders=Thing(NOT_ORDERS)),
    case("baselines.nearest_rule", baselines.nearest_rule, {"order": ORDERS[0]},
         order=Thing(["一碗", None, ["一碗"], 3])),
    case("baselines.baselines", baselines.baselines,
         {"train": TRAIN, "test": TEST, "which": ["token_only"], "steps": 1},
         names={"which": ["baseline", "which"]},
         train=Thing(NOT_ORDERS), test=Thing(NOT_ORDERS), seed=Int(0), steps=Int(1),
         which=Thing([["nope"], "token_only", 3])),
    case("orders.Order", orders.Order, {"tokens": ("一碗",), "labels": ("-",)},
         names={"tokens": ["token", "Order"], "labels": ["label", "Order"]},
         tokens=Thing([(), ("炸鸡",), (3,), ("一碗", "牛肉面")]),
         labels=Thing([("x",), (), (3,)])),
    # orders_example
    case("orders_example.labels", orders_example.labels, {},
         names={"tokens": ["token", "gloss"], "glosses": ["token", "gloss"]},
         tokens=Thing([["a"], 3, [1, 2]]), glosses=Thing([["a"], 3]), short=Bool()),
    case("orders_example.relation_kinds_per_head", orders_example.relation_kinds_per_head,
         {"n_heads": 2}, n_heads=Int(1, len(orders_example.RELATIONS))),
    case("orders_example.head_weights", orders_example.head_weights, {"kinds": []},
         names={"kinds": ["relation kind", "kinds"]}, kinds=Thing([["x"], "quantity ↔ dish",
                                                                  3, None])),
    case("orders_example.partner_share", orders_example.partner_share,
         {"n_heads": 1, "query": 0, "key": 1},
         n_heads=Int(1, 3), query=Int(0, 7), key=Int(0, 7)),
    case("orders_example.apple_contexts", orders_example.apple_contexts, {},
         d_model=Int(1, 512), seed=Int(0)),
    case("orders_example.menu_match", orders_example.menu_match, {},
         request=Array((1,)), temperature=Real(1e-3)),
    # the toy transformer
    case("model.TinyEncoder", TinyEncoder, dict(TINY), d_model=Int(1), n_layers=Int(1, 64),
         d_ff=Int(1, none_ok=True), max_len=Int(1), norm=Choice(NORMS),
         init=Choice(INITS), dropout=Real(0.0, 1.0), positions=Bool(),
         seed=Int(0, none_ok=True), n_heads=Thing([3, 0, 2.5, "2"]),
         attention=Thing(["flash", "window--2", "dilated-2x0", 3, None])),
    case("model.TinyEncoder.forward", MODEL, {"ids": torch.tensor([[1, 2, 3]])},
         ids=Ids(len(orders.VOCAB), ndim=2),
         padding_mask=Mask(ref=torch.ones(1, 3, dtype=torch.bool)), need_weights=Bool()),
    case("model.eval_mode", lambda model: eval_mode(model).__enter__(), {"model": MODEL},
         model=Thing([None, "m", 3])),
    case("fit.fit", fit, {"model": MODEL, "train": TRAIN, "steps": 1, "progress": False},
         model=Thing(NOT_MODEL), train=Thing(NOT_ORDERS), test=Thing(NOT_ORDERS[:1] + [[]]),
         steps=Int(1), batch_size=Int(1), lr=Real(0.0), weight_decay=Real(0.0),
         warmup=Int(0), max_grad_norm=Real(0.0, none_ok=True), seed=Int(0),
         eval_every=Int(1, none_ok=True), record_norms=Bool(), record_every=Int(1),
         bucket=Bool(), progress=Bool(), threads=Int(1, none_ok=True)),
    case("probe.evaluate", probe.evaluate, {"model": MODEL, "orders": TEST},
         model=Thing(NOT_MODEL), orders=Thing(NOT_ORDERS), batch_size=Int(1)),
    case("probe.predict", probe.predict, {"model": MODEL, "order": ORDERS[0]},
         model=Thing(NOT_MODEL), order=Thing([3, None, [], "炸鸡", [1, 2]])),
    case("probe.attention_maps", probe.attention_maps, {"model": MODEL, "order": "一碗牛肉面"},
         model=Thing(NOT_MODEL), order=Thing([3, None, [], "炸鸡"])),
    case("probe.attention_entropy", probe.attention_entropy, {"model": MODEL, "orders": TEST},
         model=Thing(NOT_MODEL), orders=Thing(NOT_ORDERS), normalize=Bool()),
    case("probe.label_argmax", probe.label_argmax,
         {"logits": torch.zeros(2, 7), "categories": ("dish", "ingredient")},
         logits=Tensor(ndim=2)),
    case("probe.ablated", lambda **kw: probe.ablated(**kw).__enter__(),
         {"model": MODEL, "layer": 0, "head": 1}, model=Thing(NOT_MODEL), layer=Int(0, 0),
         head=Int(0, 1)),
    case("probe.ablation_scores", probe.ablation_scores, {"model": MODEL, "orders": TEST},
         model=Thing(NOT_MODEL), orders=Thing(NOT_ORDERS), batch_size=Int(1)),
    case("train.chapter_data", train.chapter_data, {"data": (TRAIN, TEST)},
         names={"data": ["data"]}, data=Thing(["ab", (TRAIN,), ([], TEST), (TRAIN, 3), 5]),
         test_orders=Int(1, none_ok=True)),
    case("train.train_default", train.train_default, {"progress": False, "steps": 1},
         names={"nope": ["unknown setting"]}, nope=Thing([1])),
    case("train.save", train.save, {"model": MODEL, "path": "/tmp/never-written.pt"},
         model=Thing(NOT_MODEL), meta=Thing(["meta", 3, [1]])),
    case("train.benchmark", train.benchmark, {"threads": 1}, threads=Int(1),
         progress=Bool()),
    case("stability.chance_loss", stability.chance_loss, {}, n_labels=Int(1)),
    case("stability.config_label", stability.config_label,
         {"norm": "pre", "init": "xavier", "n_layers": 2},
         norm=Choice(tuple(stability.NORM_NAMES)), init=Choice(tuple(stability.INIT_NAMES)),
         n_layers=Int(1, stability.MAX_LAYERS), lr=Real(0.0, none_ok=True)),
    case("stability.run", stability.run,
         {"norm": "pre", "init": "xavier", "n_layers": 1, "steps": 1, "data": (TRAIN, TEST)},
         norm=Choice(tuple(stability.NORM_NAMES)), init=Choice(tuple(stability.INIT_NAMES)),
         n_layers=Int(1, stability.MAX_LAYERS), lr=Real(0.0), steps=Int(1), seed=Int(0),
         threads=Int(1, none_ok=True), progress=Bool(), data=Thing(["ab", (TRAIN,), 3])),
    case("stability.at_init", stability.at_init,
         {"norm": "pre", "init": "xavier", "n_layers": 1, "data": (TRAIN, TEST)},
         norm=Choice(tuple(stability.NORM_NAMES)), n_layers=Int(1, stability.MAX_LAYERS),
         seed=Int(0), threads=Int(1, none_ok=True)),
    case("stability.smooth", stability.smooth, {"values": [1.0, 2.0]},
         values=Thing(["ab", [[1.0]], [], 3, [object()]]), window=Int(1)),
    case("heads.attention_parameters", heads.attention_parameters,
         {"d_model": 8, "n_heads": 2}, d_model=Int(1), n_heads=Thing([3, 0, 2.5, None])),
    case("heads.train_heads", heads.train_heads,
         {"n_heads": 2, "d_model": 8, "steps": 1, "data": (TRAIN, TEST)},
         n_heads=Thing([3, 0, 2.5, None]), d_model=Int(1), n_layers=Int(1, 64),
         steps=Int(1), lr=Real(0.0), seed=Int(0), progress=Bool(),
         data=Thing(["ab", (TRAIN,), 3])),
    case("heads.sweep", heads.sweep, {"head_counts": (1,), "d_model": 8, "steps": 1,
                                      "data": (TRAIN, TEST)},
         names={"head_counts": ["head_counts", "n_heads"]},
         head_counts=Thing([(), (3,), (0,), "12", 3]), progress=Bool()),
    case("heads.js_divergence", heads.js_divergence, {"p": [0.5, 0.5], "q": [1.0, 0.0]},
         p=Array(), q=Thing([[0.3, 0.3, 0.4], [2.0, -1.0], "x"])),
    case("heads.pairwise", heads.pairwise, {"maps": np.full((2, 3, 3), 1 / 3)},
         maps=Array((3,)), metric=Choice(heads.METRICS)),
    case("heads.similarity", heads.similarity, {"model": MODEL, "orders": TEST},
         model=Thing(NOT_MODEL), orders=Thing(NOT_ORDERS), metric=Choice(heads.METRICS)),
    case("heads.ablation", heads.ablation, {"model": MODEL, "orders": TEST},
         model=Thing(NOT_MODEL), orders=Thing(NOT_ORDERS)),
    # masktraps
    case("masktraps.dtype_outcome", masktraps.dtype_outcome,
         {"api": "masked_fill", "dtype": "bool"}, api=Choice(masktraps.APIS),
         dtype=Choice(masktraps.MASK_DTYPES), seed=Int(0)),
    case("masktraps.masked_weights", masktraps.masked_weights,
         {"scores": SCORES_T, "allowed": CAUSAL4},
         scores=Thing([SCORES_T.long(), SCORES_T.numpy(), "s", torch.zeros(0)]),
         allowed=Mask(all_false_bad=False), handling=Choice(tuple(masktraps.HANDLING))),
    case("masktraps.LooseAttention", masktraps.LooseAttention, {"d_model": 8, "n_heads": 2},
         d_model=Int(1), flip=Bool(), handling=Choice(tuple(masktraps.HANDLING))),
    case("masktraps.loosen", masktraps.loosen, {"model": MODEL}, model=Thing(NOT_MODEL),
         flip=Bool(), handling=Choice(tuple(masktraps.HANDLING))),
    case("masktraps.nan_share", masktraps.nan_share, {"model": MODEL},
         model=Thing([None, "m", torch.nn.ReLU()])),
    case("masktraps.bug_data", masktraps.bug_data, {"bug": "correct"},
         bug=Choice(tuple(masktraps.BUGS)), length=Int(1, masktraps.BUG_MAX_REAL),
         padding=Int(0, masktraps.BUG_MAX_PAD)),
    case("masktraps.seeded_layer", masktraps.seeded_layer, {"seed": 1, "n_tokens": 4},
         seed=Int(0), n_tokens=Int(1, 4096), d_model=Int(1),
         n_heads=Thing([3, 0, 2.5, None])),
    # attention_roles
    case("attention_roles.read_order", attention_roles.read_order, {"text": "一碗牛肉面"},
         names={"text": ["order", "text", "read"]},
         text=Thing(["", "  ", "炸鸡", 3, None, "一碗" * 60]), max_len=Int(1)),
    case("attention_roles.order_maps", attention_roles.order_maps,
         {"model": MODEL, "text": "一碗牛肉面"}, names={"text": ["order", "text", "read"]},
         model=Thing(NOT_MODEL), text=Thing(["", "炸鸡", 3, None, ["一碗"]])),
    case("attention_roles.token_labels", attention_roles.token_labels, {"order": ORDERS[0]},
         order=Thing(["一碗", None, 3]), gloss=Bool()),
    case("attention_roles.relation_pairs", attention_roles.relation_pairs,
         {"order": ORDERS[0]}, order=Thing(["一碗", None, 3])),
    case("attention_roles.relation_mass", attention_roles.relation_mass,
         {"model": MODEL, "orders": TEST}, model=Thing(NOT_MODEL), orders=Thing(NOT_ORDERS)),
    case("attention_roles.category_mass", attention_roles.category_mass,
         {"model": MODEL, "orders": TEST}, names={"queries": ["quer"]},
         model=Thing(NOT_MODEL), orders=Thing(NOT_ORDERS),
         queries=Thing([(), ("food",), 3])),
    case("attention_roles.head_name", attention_roles.head_name, {"layer": 0, "head": 1},
         layer=Int(0), head=Int(0)),
    case("attention_roles.specialists", attention_roles.specialists,
         {"stats": {"r": {"mass": np.ones((1, 2)), "chance": 0.5}}},
         stats=Thing([{}, [], None, "s"]), min_mass=Real(0.0, 1.0)),
    case("attention_roles.entropy_during_training", attention_roles.entropy_during_training,
         {"model": MODEL, "train": TRAIN, "probe": TEST, "checkpoints": [0],
          "progress": False},
         names={"checkpoints": ["checkpoint"]},
         model=Thing(NOT_MODEL), probe=Thing(NOT_ORDERS), normalize=Bool(),
         checkpoints=Thing([[], "0", [-1], [1.5], 3])),
    case("attention_roles.predictions", attention_roles.predictions,
         {"model": MODEL, "orders": TEST}, model=Thing(NOT_MODEL), orders=Thing(NOT_ORDERS),
         batch_size=Int(1)),
    case("attention_roles.mislabelled", attention_roles.mislabelled,
         {"model": MODEL, "orders": TEST}, model=Thing(NOT_MODEL), orders=Thing(NOT_ORDERS)),
    # longctx
    case("longctx.full_attention", longctx.full_attention,
         {"q": QKV[0], "k": QKV[1], "v": QKV[2], "mask": longctx.window_mask(6, 1)},
         q=Tensor(2), k=Tensor(2), v=Tensor(2), mask=Mask()),
    case("longctx.window_mask", longctx.window_mask, {"n": 4, "window": 1}, n=Int(1),
         window=Int(0), causal=Bool()),
    case("longctx.masked_window_attention", longctx.masked_window_attention,
         {"q": QKV[0], "k": QKV[1], "v": QKV[2], "window": 1},
         q=Tensor(2), k=Tensor(2), v=Tensor(2), window=Int(0), causal=Bool()),
    case("longctx.banded_attention", longctx.banded_attention,
         {"q": QKV[0], "k": QKV[1], "v": QKV[2], "window": 1},
         q=Tensor(2), k=Tensor(2), v=Tensor(2), window=Int(0), causal=Bool(),
         block=Int(1, none_ok=True)),
    case("longctx.peak_memory", longctx.peak_memory, {"fn": lambda: 1},
         fn=Thing(NOT_CALLABLE)),
    case("longctx.fit_exponent", longctx.fit_exponent, {"ns": [1, 2, 4], "costs": [1, 4, 16]},
         names={"ns": ["ns", "n, cost", "sizes"], "costs": ["costs", "n, cost", "sizes"]},
         ns=Array((1,)), costs=Thing([[1, 2], [0, 1, 2], [-1, 2, 3], "c", [[1, 2, 3]]])),
    case("longctx.banded_score_entries", longctx.banded_score_entries, {"n": 8, "window": 2},
         n=Int(1), window=Int(0), block=Int(1, none_ok=True)),
    case("longctx.window_keys", longctx.window_keys, {"n": 8, "window": 2}, n=Int(1),
         window=Int(0), causal=Bool()),
    case("longctx.random_qkv", longctx.random_qkv, {"n": 4}, n=Int(1), heads=Int(1),
         d_k=Int(1), seed=Int(0)),
    case("longctx.cost_sweep", longctx.cost_sweep, {"ns": [8], "methods": ["full"]},
         names={"ns": ["ns", "n"], "methods": ["method"]},
         ns=Thing([[], [0], [2.5], "8", 8]), measure=Choice(("memory", "time")),
         methods=Thing([[], ["flash"], "full"]), window=Int(0), heads=Int(1), d_k=Int(1),
         repeats=Int(1), seed=Int(0)),
    case("longctx.window_kernels", longctx.window_kernels,
         {"n": 8, "window": 2, "repeats": 1}, n=Int(2, 16384), window=Int(0),
         heads=Int(1), d_k=Int(1), repeats=Int(1, 100), seed=Int(0)),
    case("longctx.block_flops", longctx.block_flops, {"n": 4, "d_model": 8}, n=Int(1),
         d_model=Int(1), d_ff=Int(1, none_ok=True)),
    case("longctx.block_costs", longctx.block_costs, {"ns": [4], "d_model": 8, "n_heads": 2,
                                                     "repeats": 1},
         names={"ns": ["ns", "n"]}, ns=Thing([[], [0], "4"]), d_model=Int(1),
         n_heads=Thing([3, 0, 2.5]), repeats=Int(1), seed=Int(0)),
    # kvcache
    case("kvcache.causal_self_attention", kvcache.causal_self_attention,
         {"X": np.ones((3, 4)), "W_q": np.ones((4, 2)), "W_k": np.ones((4, 2)),
          "W_v": np.ones((4, 5))},
         names={"W_k": ["W_k", "W_q"]},
         X=Array((2,)), W_q=Array((2,)), W_k=Array((2,)), W_v=Array((2,))),
    case("kvcache.decode", kvcache.decode,
         {"X": np.ones((3, 4)), "W_q": np.ones((4, 2)), "W_k": np.ones((4, 2)),
          "W_v": np.ones((4, 5))}, X=Array((2,)), W_v=Array((2,))),
    case("kvcache.KVCache", kvcache.KVCache, {"d_k": 2, "d_v": 3}, d_k=Int(1), d_v=Int(1)),
    case("kvcache.KVCache.append", kvcache.KVCache(2, 3).append,
         {"k": [1.0, 2.0], "v": [1.0, 2.0, 3.0]},
         names={"k": ["k", "key"], "v": ["v", "value"]}, k=Array((1,)), v=Array((1,))),
    case("kvcache.cache_bytes", kvcache.cache_bytes,
         {"n_layers": 1, "n_tokens": 2, "d_model": 4}, n_layers=Int(1), n_tokens=Int(0),
         d_model=Int(1), bytes_per_number=Int(1, 16)),
    case("kvcache.TinyDecoder", kvcache.TinyDecoder,
         {"vocab_size": 16, "d_model": 8, "n_heads": 2, "n_layers": 1, "max_len": 8},
         vocab_size=Int(2), d_model=Int(1), n_layers=Int(1), max_len=Int(1), seed=Int(0),
         n_heads=Thing([3, 0, 2.5])),
    case("kvcache.TinyDecoder.forward", DECODER, {"tokens": torch.tensor([[1, 2, 3]])},
         tokens=Ids(16, ndim=2)),
    case("kvcache.TinyDecoder.prefill", DECODER.prefill, {"tokens": [1, 2, 3]},
         tokens=Ids(16)),
    case("kvcache.TinyDecoder.generate", DECODER.generate, {"prompt": [1, 2], "n_new": 2},
         prompt=Ids(16), n_new=Int(0, 10), use_cache=Bool()),
    case("kvcache.generation_times", kvcache.generation_times,
         {"model": DECODER, "prompt": [1], "lengths": [1]}, names={"lengths": ["n_new",
                                                                              "lengths"]},
         model=Thing(NOT_MODEL), prompt=Ids(16), lengths=Thing([[], [0], [1.5], "1"]),
         repeats=Int(1, 100)),
    case("kvcache.positions_per_step", kvcache.positions_per_step,
         {"model": DECODER, "prompt": [1, 2], "n_new": 2},
         model=Thing(NOT_MODEL), prompt=Ids(16), n_new=Int(0, 10), use_cache=Bool()),
    # efficient
    case("efficient.FusedQKV", efficient.FusedQKV, {"layer": LAYER}, layer=Thing(NOT_MODEL)),
    case("efficient.einsum_attention", efficient.einsum_attention, {"layer": LAYER, "x": X3},
         layer=Thing(NOT_MODEL), x=Tensor(ndim=3)),
    case("efficient.variants", efficient.variants, {"layer": LAYER}, layer=Thing(NOT_MODEL)),
    case("efficient.benchmark", efficient.benchmark,
         {"batch": 1, "seq_len": 2, "d_model": 8, "n_heads": 2, "rounds": 1},
         batch=Int(1), seq_len=Int(1), d_model=Int(1), n_heads=Thing([3, 0, 2.5]),
         rounds=Int(1), seed=Int(0), device=Choice(("cpu", "cuda"))),
    case("efficient.MinimalSDPA", efficient.MinimalSDPA, {"d_model": 8, "n_heads": 2},
         d_model=Int(1), n_heads=Thing([3, 0, 2.5])),
    case("efficient.mha_kernels", efficient.mha_kernels,
         {"batch": 1, "seq_len": 4, "d_model": 8, "n_heads": 2}, batch=Int(1, 64),
         seq_len=Int(2, 1024), n_heads=Thing([3, 0, 2.5])),
    # beyond
    case("beyond.feature_map", beyond.feature_map, {"x": QKV[0]}, x=Tensor(1)),
    case("beyond.linear_attention", beyond.linear_attention,
         {"q": QKV[0], "k": QKV[1], "v": QKV[2]}, q=Tensor(2), k=Tensor(2), v=Tensor(2),
         causal=Bool()),
    case("beyond.linear_attention_quadratic", beyond.linear_attention_quadratic,
         {"q": QKV[0], "k": QKV[1], "v": QKV[2]}, q=Tensor(2), k=Tensor(2), v=Tensor(2),
         causal=Bool()),
    case("beyond.dilated_offsets", beyond.dilated_offsets, {"window": 1, "dilation": 2},
         window=Int(0), dilation=Int(1)),
    case("beyond.dilated_attention", beyond.dilated_attention,
         {"q": QKV[0], "k": QKV[1], "v": QKV[2], "window": 1, "dilation": 2},
         q=Tensor(2), v=Tensor(2), window=Int(0), dilation=Int(1),
         k=Thing([QKV[1][..., :4, :], QKV[1].long(), None])),
    case("beyond.dilated_mask", beyond.dilated_mask, {"n": 5, "window": 1, "dilation": 2},
         n=Int(1), window=Int(0), dilation=Int(1)),
    case("beyond.hybrid_mask", beyond.hybrid_mask, {"n": 5, "window": 1, "n_global": 1},
         n=Int(1), window=Int(0), n_global=Int(0, 5)),
    case("beyond.hybrid_attention", beyond.hybrid_attention,
         {"q": QKV[0], "k": QKV[1], "v": QKV[2], "window": 1, "n_global": 1},
         q=Tensor(2), v=Tensor(2), window=Int(0), n_global=Int(0, 6),
         k=Thing([QKV[1][..., :4, :], QKV[1].long(), None])),
    case("beyond.reference", beyond.reference,
         {"kind": "dilated", "q": QKV[0], "k": QKV[1], "v": QKV[2], "window": 1,
          "dilation": 2},
         names={"size": ["parameters"]}, kind=Choice(("dilated", "hybrid")), q=Tensor(2),
         size=Thing([3])),
    case("beyond.parse_spec", beyond.parse_spec, {"spec": "window-2"},
         names={"spec": ["spec"]},
         spec=Thing(["window--2", "window-2.5", "dilated-2x0", "hybrid-2", "linear-1", "",
                     "window-", "flash", 3, None, "dilated-1x2x3", "window-٣"])),
    case("beyond.pattern_mask", beyond.pattern_mask,
         {"kind": "dilated", "n": 5, "window": 1, "dilation": 2},
         names={"size": ["parameters"]},
         kind=Choice(("full", "window", "dilated", "hybrid")), n=Int(1), window=Int(0),
         dilation=Int(1), size=Thing([3])),
    case("beyond.VariantAttention", beyond.VariantAttention,
         {"d_model": 8, "n_heads": 2, "spec": "window-1"}, d_model=Int(1),
         spec=Thing(["window--1", "flash", 3, None]), dropout=Real(0.0, 1.0)),
    case("beyond.VariantAttention.forward", beyond.VariantAttention(8, 2, "linear"),
         {"x": X3, "padding_mask": np.ones((2, 5), bool)}, x=Tensor(ndim=3),
         padding_mask=Mask(), mask=Thing([CAUSAL4[:1], masks.causal_mask(5)])),
    case("beyond.methods", beyond.methods, {}, window=Int(0), dilation=Int(1),
         n_global=Int(0)),
    case("beyond.memory_curves", beyond.memory_curves, {"ns": [8]},
         names={"ns": ["ns", "n"]}, ns=Thing([[], [0], "8", 8]), d=Int(1), heads=Int(1)),
    case("beyond.time_curves", beyond.time_curves, {"ns": [8], "repeats": 1},
         names={"ns": ["ns", "n"]}, ns=Thing([[], [0], "8"]), repeats=Int(1), d=Int(1)),
    # methods and classes not covered above
    case("masktraps.LooseAttention.forward", masktraps.LooseAttention(8, 2), {"x": X3},
         names={"x": ["x", "t must"]},
         x=Thing([X3.long(), X3[0], X3[..., :6], X3.double(), X3.numpy(), None]),
         padding_mask=Mask(all_false_bad=False, ref=torch.ones(2, 5, dtype=torch.bool))),
    case("efficient.FusedQKV.forward", efficient.FusedQKV(LAYER), {"x": X3},
         x=Tensor(ndim=3)),
    case("orders.Vocab", orders.Vocab, {"tokens": ["a", "b"]},
         names={"tokens": ["token"]}, tokens=Thing([[], "ab", ["a", "a"], [1], ["<pad>"]])),
    case("orders.Vocab.encode", orders.VOCAB.encode, {"tokens": ["一碗"]},
         names={"tokens": ["token", "word"]}, tokens=Thing([None, 3, "一碗", ["x"]])),
    case("orders.Vocab.decode", orders.VOCAB.decode, {"ids": [1]},
         names={"ids": ["id", "decode"]}, ids=Thing([[1.5], "ab", [-1], [10**6]]),
         keep_pad=Bool()),
    case("kvcache.KVCache.attend", (lambda c: (c.append([1.0, 2.0], [1.0]), c)[1])(
        kvcache.KVCache(2, 1)).attend, {"q": [1.0, 0.0]}, q=Array((1,))),
    case("model.EncoderBlock", EncoderBlock, {"d_model": 8, "n_heads": 2, "d_ff": 16},
         d_ff=Int(1), norm=Choice(NORMS), dropout=Real(0.0, 1.0),
         attention=Thing(["flash", 3, "window--1"])),
    case("train.load", train.load, {"path": train.CHECKPOINT},
         names={"path": ["path", "checkpoint"]}, path=Thing([3, None, "", [1]])),
    case("train.checkpoint_meta", train.checkpoint_meta, {},
         names={"path": ["path", "checkpoint"]}, path=Thing([3, "", [1]])),
    case("masktraps.dtype_table", masktraps.dtype_table, {"apis": ["masked_fill"]},
         names={"apis": ["api"], "dtypes": ["dtype"]},
         apis=Thing([3, ["x"], "masked_fill"]), dtypes=Thing([3, ["float16"]]), seed=Int(0)),
    case("stability.Run.final_loss",
         stability.Run("pre", "xavier", 1, 0.1, 1, loss=[1.0]).final_loss, {},
         last=Int(1)),
    case("stability.Run.profile", stability.Run("pre", "xavier", 1, 0.1, 1).profile, {},
         what=Choice(("activation", "gradient")), when=Choice(("first", "last"))),
    case("stability.frequency_baseline", stability.frequency_baseline,
         {"data": (TRAIN, TEST)}, data=Thing([3, "ab", (TRAIN,), ([], TEST)])),
    case("heads.redundancy", heads.redundancy, {"model": MODEL, "orders": TEST},
         model=Thing(NOT_MODEL), orders=Thing(NOT_ORDERS), metric=Choice(heads.METRICS)),
    case("mha.MultiHeadSelfAttention.from_module", mha.MultiHeadSelfAttention.from_module,
         {"other": LAYER}, other=Thing(NOT_MODEL)),
    case("config.Config.replace", train.MODEL.replace, {},
         names={"nope": ["no setting"]}, nope=Thing([1])),
    # timing
    case("timing.best_of", timing.best_of, {"fn": lambda: 1, "repeats": 1},
         fn=Thing(NOT_CALLABLE), repeats=Int(1, timing.MAX_REPEATS),
         warmup=Int(0, timing.MAX_REPEATS)),
    case("timing.compare", timing.compare, {"fns": {"a": lambda: 1}, "repeats": 1},
         fns=Thing([{}, None, {"a": 3}, {1: lambda: 1}, [lambda: 1]]),
         repeats=Int(1, timing.MAX_REPEATS), warmup=Int(0, timing.MAX_REPEATS)),
    case("timing.torch_threads", lambda n: timing.torch_threads(n).__enter__(), {"n": 1},
         n=Int(1, 1024)),
    # display
    case("display.setup", display.setup, {}, seed=Int(0, 2**32 - 1)),
    case("display.glue", display.glue, {"name": "x", "value": 1},
         name=Thing(["1x", "a b", "", 3, None]), display=Bool()),
    case("display.show_source", display.show_source, {"obj": attention.softmax},
         names={"obj": ["show_source"]}, obj=Thing([3, "softmax", None, [1]])),
    case("display.Matrix", display.Matrix, {"name": "Q", "values": np.ones((2, 2))},
         names={"rows": ["label"], "cols": ["label"]}, name=Thing([3, None]),
         values=Array((2,)), rows=Thing([["a"], 3]), cols=Thing([["a", "b", "c"], 3]),
         digits=Int(0, 8)),
]


def _call(c: Case, arg: str, value):
    kwargs = {**c.valid, arg: value}
    return c.fn(**kwargs)


def _has_nan(out) -> bool:
    if isinstance(out, torch.Tensor):
        return out.is_floating_point() and bool(torch.isnan(out).any())
    if isinstance(out, np.ndarray):
        return out.dtype.kind == "f" and bool(np.isnan(out).any())
    if isinstance(out, float):
        return math.isnan(out)
    if isinstance(out, (list, tuple)):
        return any(_has_nan(o) for o in out)
    if isinstance(out, dict):
        return any(_has_nan(o) for o in out.values())
    return False


def check_bad_call(c: Case, data, calls: Counter = CALLS) -> None:
    """Replace one argument of ``c``'s valid call with a bad value drawn from ``data``: the call
    must raise a ValueError or TypeError whose message names the argument (``calls`` counts
    them). tests/test_bad_input_modern.py runs its cases through this too."""
    arg = data.draw(st.sampled_from(sorted(c.kinds)), label="argument")
    value = data.draw(c.kinds[arg].bad(c.valid.get(arg)), label=f"bad {arg}")
    try:
        out = _call(c, arg, value)
    except (ValueError, TypeError) as err:
        message = str(err)
        words = c.names.get(arg, [arg])
        assert any(w in message for w in words), (
            f"{c.name}({arg}={value!r}) raised {type(err).__name__} without naming "
            f"{words}: {message}")
        assert len(message) > 25, f"{c.name}({arg}={value!r}): message too short: {message}"
        calls[c.name] += 1
        return
    except Exception as err:   # noqa: BLE001 - an obscure error is what this test catches
        pytest.fail(f"{c.name}({arg}={value!r}) raised {type(err).__name__} (not a clear "
                    f"ValueError/TypeError): {err}")
    pytest.fail(f"{c.name}({arg}={value!r}) accepted bad input and returned "
                f"{'NaN' if _has_nan(out) else type(out).__name__}")


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.name)
@EXAMPLES
@given(data=st.data())
def test_bad_input_raises_a_clear_error(c, data, one_thread):
    check_bad_call(c, data)


def test_valid_calls_work():
    """The baseline of every case is a valid call (so the bad calls test the argument, not a
    broken baseline); the heavy ones (training, benchmarks) are skipped here."""
    heavy = {"train.train_default", "train.benchmark", "train.save", "efficient.benchmark",
             "longctx.block_costs", "beyond.time_curves", "longctx.cost_sweep",
             "stability.run", "heads.sweep", "heads.train_heads", "fit.fit",
             "attention_roles.entropy_during_training", "beyond.memory_curves",
             "display.show_source", "display.setup"}
    for c in CASES:
        if c.name in heavy or "(" in c.name:
            continue
        out = c.fn(**c.valid)
        assert not _has_nan(out), c.name


def test_coverage_report():
    """How many public functions the cases cover, and how many bad calls each made (run
    after the property test; with -p no:randomly the order is the file's)."""
    names = {c.name.split("(")[0] for c in CASES}
    print(f"\nbad-input cases: {len(CASES)} over {len(names)} public functions/methods; "
          f"bad calls made: {sum(CALLS.values())} (every one a clear ValueError/TypeError)")
    assert len(names) >= 100


# ---- the failures the issue lists, one by one -------------------------------------------------

ISSUE_CALLS = {
    "full_attention, all-False mask row": lambda: longctx.full_attention(
        *QKV, mask=torch.zeros(6, 6, dtype=torch.bool)),
    "dilated_attention, 4 queries 6 keys": lambda: beyond.dilated_attention(
        QKV[0][..., :4, :], QKV[1], QKV[2], 1, 2),
    "hybrid_attention, 4 queries 6 keys": lambda: beyond.hybrid_attention(
        QKV[0][..., :4, :], QKV[1], QKV[2], 1, 1),
    "TinyDecoder.generate float ids": lambda: DECODER.generate([1.7, 2.2], 2),
    "TinyDecoder.prefill float ids": lambda: DECODER.prefill([1.9]),
    "TinyDecoder.forward id >= vocab": lambda: DECODER(torch.tensor([[16]])),
    "TinyDecoder.forward 1-D": lambda: DECODER(torch.tensor([1, 2])),
    "TinyDecoder.forward float ids": lambda: DECODER(torch.tensor([[1.0, 2.0]])),
    "TinyDecoder.forward too long": lambda: DECODER(torch.zeros(1, 13, dtype=torch.long)),
    "attention.entropy([2.0, 2.0])": lambda: attention.entropy([2.0, 2.0]),
    "softmax([[-inf, -inf]])": lambda: attention.softmax([[-math.inf, -math.inf]]),
    "banded_attention n = 0": lambda: longctx.banded_attention(
        *(t[..., :0, :] for t in QKV), 1),
    "int64 q/k/v": lambda: longctx.full_attention(*(t.long() for t in QKV)),
    "pattern_mask('full', 2.5)": lambda: beyond.pattern_mask("full", 2.5),
    "dilated_mask(2.5, 1, 1)": lambda: beyond.dilated_mask(2.5, 1, 1),
    "parse_spec('window--2')": lambda: beyond.parse_spec("window--2"),
    "split_heads wrong width": lambda: LAYER.split_heads(X3[..., :6]),
    "merge_heads wrong width": lambda: LAYER.merge_heads(torch.ones(2, 2, 5, 3)),
    "mha int64 x": lambda: LAYER(X3.long()),
    "scaling.dot_products bad seed": lambda: scaling.dot_products(4, seed=-1),
    "scaling.histogram bad bins": lambda: scaling.histogram([0.0, 1.0], -1, 1, bins=2.5),
}


@pytest.mark.parametrize("name", ISSUE_CALLS)
def test_the_issues_bad_calls_raise_clear_errors(name):
    with pytest.raises((ValueError, TypeError)) as info:
        ISSUE_CALLS[name]()
    assert len(str(info.value)) > 25


def test_int64_hint_converts_the_input_not_the_layer():
    with pytest.raises(TypeError) as info:
        LAYER(X3.long())
    assert "x.to(torch.float32)" in str(info.value)
    assert "layer.to(torch.int64)" not in str(info.value)


@pytest.mark.parametrize("spec", ["window-1", "dilated-1x2", "hybrid-1+1", "linear"])
def test_variant_attention_takes_a_numpy_padding_mask(spec):
    layer = beyond.VariantAttention(8, 2, spec).eval()
    pad = np.array([[True] * 5, [True, True, True, False, False]])
    with torch.no_grad():
        torch.testing.assert_close(layer(X3, padding_mask=pad),
                                   layer(X3, padding_mask=torch.from_numpy(pad)))
