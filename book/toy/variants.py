"""The takeout-order encoder built with other positions or fewer key/value heads (chapter 11).

The mechanisms live in :mod:`book.ideas.positions` (sinusoidal tables, RoPE) and
:mod:`book.ideas.gqa` (grouped-query attention); this module puts them into the book's
:class:`~book.toy.model.TinyEncoder`, so that chapter 11 can train each variant on the
takeout orders.

* :func:`positional_encoder` — positions ``"none"``, ``"learned"``, ``"sinusoidal"`` or ``"rope"``;
* :func:`gqa_encoder` — ``n_kv_heads`` key/value heads per attention layer;
* :func:`gqa_rope_gap` — how far ``gqa_encoder(n_heads)`` and the RoPE encoder, which share
  every weight, are apart on real orders (rounding only: the chapter words it by the number).
"""

from __future__ import annotations

import torch
from torch import nn

from book.ideas import gqa, positions
from book.kit import validate
from book.toy import orders as O
from book.toy.model import TinyEncoder


def positional_encoder(kind: str, **model_kw):
    """A :class:`~book.toy.model.TinyEncoder` whose positions are ``kind`` in
    :data:`book.ideas.positions.KINDS`.

    ``"learned"`` is the book's default (a trained table); ``"none"`` drops it;
    ``"sinusoidal"`` puts the fixed table in its place; ``"rope"`` drops the table and rotates
    queries and keys inside every attention layer. Other keywords go to ``TinyEncoder``
    (``seed`` included), so the four models start from the same weights where they share them.
    """
    validate.choice("kind", kind, positions.KINDS)
    if "positions" in model_kw or "attention" in model_kw:
        raise ValueError("positional_encoder sets positions and attention itself; pass only "
                         "the other TinyEncoder settings (d_model, n_heads, seed, …)")
    model = TinyEncoder(positions=kind == "learned", **model_kw)
    if kind == "sinusoidal":
        model.pos = positions.SinusoidalPositions(model.config["max_len"], model.config["d_model"])
    elif kind == "rope":
        for block in model.blocks:
            block.attn = positions.RopeSelfAttention.from_module(block.attn)
    model.position_kind = kind  # not in model.config: book.toy.train.load rebuilds from that
    return model


def gqa_encoder(n_kv_heads: int, *, position: str = "rope", **model_kw):
    """The takeout-order :class:`~book.toy.model.TinyEncoder` with ``n_kv_heads`` key/value heads
    per attention layer and ``position`` in :data:`book.ideas.positions.KINDS` (default RoPE, like
    Llama-style models).

    With ``n_kv_heads = n_heads`` the layers are copies of the plain ones, so the model has
    :func:`positional_encoder` (``position``)'s weights, every one, and computes the same
    mathematics through other projection shapes (equal up to rounding: :func:`gqa_rope_gap`
    measures it); with fewer, the shared
    key/value projections are freshly Xavier-initialised (seeded by ``seed``).
    """
    if "attention" in model_kw:
        raise ValueError("gqa_encoder sets the attention layers itself; leave out attention=")
    validate.choice("position", position, positions.KINDS)
    model = positional_encoder(position, **model_kw)
    gqa.check_groups(model.n_heads, n_kv_heads)
    seed = model_kw.get("seed", 0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0 if seed is None else seed)
        for block in model.blocks:
            layer = gqa.from_mha(block.attn, n_kv_heads)
            if n_kv_heads != model.n_heads:
                with torch.no_grad():
                    for lin in (layer.w_k, layer.w_v):
                        nn.init.xavier_uniform_(lin.weight)
                        nn.init.zeros_(lin.bias)
            block.attn = layer
    model.n_kv_heads = n_kv_heads
    return model


def gqa_rope_gap(*, n_orders: int = 16, data_seed: int = 0, **model_kw) -> float:
    """Max |difference| between the logits of ``gqa_encoder(n_heads)`` and of the RoPE encoder.

    The two share every weight (``model_kw`` go to both, ``seed`` included) and compute the same
    mathematics, but the GQA layers project keys and values through other matrix shapes, so a
    BLAS library may round them differently: 0.0 on some processors, about 1e-6 (float32) on
    others. ``n_orders`` seeded takeout orders (``data_seed``) are the input.
    """
    n_orders = validate.integer("n_orders", n_orders, low=1, high=4096)
    data_seed = validate.integer("data_seed", data_seed, low=0)
    rope = positional_encoder("rope", **model_kw).eval()
    same = gqa_encoder(rope.n_heads, **model_kw).eval()
    batch = O.collate(O.generate(n_orders, seed=data_seed))
    with torch.no_grad():
        a = same(batch.ids, batch.padding_mask)
        b = rope(batch.ids, batch.padding_mask)
    return float((a - b).abs().max())
