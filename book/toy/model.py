"""The toy transformer of the pitfalls chapters: :class:`TinyEncoder` and its blocks.

:class:`TinyEncoder` is built from the book's own :class:`book.ideas.mha.MultiHeadSelfAttention`
(``attention="scratch"``, the default) or its fused twin
:class:`~book.ideas.mha.MultiHeadSelfAttentionSDPA` (``attention="sdpa"``: same weights; measured
only about 5 % faster at this size on a CPU, so the default runs the book's own code), or a
variant of chapter 10 (``"window-2"``, ``"dilated-2x2"``, ``"hybrid-2+1"``, ``"linear"``).
Switches for the pitfalls chapters:

* ``norm="pre"`` (LayerNorm before each sub-layer), ``"post"`` (after the residual sum, as in
  the 2017 paper) or ``"none"``;
* ``init="xavier"``, ``"torch"`` (PyTorch's defaults), ``"small"`` (N(0, 0.02)) or ``"large"``
  (N(0, 1): every linear layer multiplies the signal by about √d_model);
* ``positions=False`` drops the positional embeddings (the model then sees a bag of words).

:func:`eval_mode` is the one way the book runs a model for measurement (eval mode, no
gradients, training mode restored afterwards). Training lives in :mod:`book.toy.fit`, probing a
trained model in :mod:`book.toy.probe`; :mod:`book.toy.train` re-exports all three.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
from torch import nn

from book.ideas.beyond import VariantAttention, parse_spec
from book.ideas.mha import MultiHeadSelfAttention, MultiHeadSelfAttentionSDPA
from book.kit import validate
from book.kit.config import Config
from book.toy.orders import LABELS, VOCAB

NORMS = ("pre", "post", "none")
INITS = ("xavier", "torch", "small", "large")
ATTENTIONS = ("scratch", "sdpa")


@dataclass(frozen=True, eq=False)   # eq: Config compares like a dict
class EncoderConfig(Config):
    """What a :class:`TinyEncoder` was built with (``model.config``); :func:`book.toy.train.save`
    stores it as a plain dict, and ``TinyEncoder(**config)`` rebuilds the model."""

    vocab_size: int
    n_labels: int
    d_model: int
    n_heads: int
    n_layers: int
    d_ff: int
    max_len: int
    norm: str
    init: str
    dropout: float
    attention: str
    positions: bool


class EncoderBlock(nn.Module):
    """Self-attention and a feed-forward network, each with a residual connection.

    ``norm="pre"``:  x + attn(LN(x)),  then  x + ff(LN(x))
    ``norm="post"``: LN(x + attn(x)),  then  LN(x + ff(x))
    ``norm="none"``: x + attn(x),      then  x + ff(x)
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, norm: str = "pre",
                 dropout: float = 0.0, attention: str = "scratch"):
        super().__init__()
        self.norm = validate.choice("norm", norm, NORMS)
        d_ff = validate.integer("d_ff", d_ff, low=1)
        if attention in ATTENTIONS:
            layer = {"sdpa": MultiHeadSelfAttentionSDPA, "scratch": MultiHeadSelfAttention}
            self.attn = layer[attention](d_model, n_heads, dropout=dropout)
        else:  # a variant from the "beyond" chapter: 'window-2', 'dilated-2x2', 'linear', …
            try:
                parse_spec(attention)
            except (TypeError, ValueError):
                raise ValueError(f"attention={attention!r} is not one of {list(ATTENTIONS)} "
                                 "nor a variant of chapter 10 such as 'window-2', "
                                 "'dilated-2x2', 'hybrid-2+1' or 'linear'") from None
            self.attn = VariantAttention(d_model, n_heads, attention, dropout=dropout)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))
        use_ln = norm != "none"
        self.norm1 = nn.LayerNorm(d_model) if use_ln else nn.Identity()
        self.norm2 = nn.LayerNorm(d_model) if use_ln else nn.Identity()
        self.drop = nn.Dropout(dropout)

    def _attend(self, x, padding_mask, need_weights):
        if need_weights and type(self.attn) is MultiHeadSelfAttentionSDPA:
            # the fused kernel keeps no weights; the from-scratch forward (same parameters) does
            return MultiHeadSelfAttention.forward(self.attn, x, padding_mask=padding_mask,
                                                  need_weights=True)
        if need_weights:
            return self.attn(x, padding_mask=padding_mask, need_weights=True)
        return self.attn(x, padding_mask=padding_mask), None

    def forward(self, x, padding_mask=None, need_weights: bool = False):
        validate.boolean("need_weights", need_weights)
        if self.norm == "post":
            a, weights = self._attend(x, padding_mask, need_weights)
            x = self.norm1(x + self.drop(a))
            x = self.norm2(x + self.drop(self.ff(x)))
        else:   # "pre" (norm1/norm2 are LayerNorms) or "none" (they are identities)
            a, weights = self._attend(self.norm1(x), padding_mask, need_weights)
            x = x + self.drop(a)
            x = x + self.drop(self.ff(self.norm2(x)))
        return x, weights


class TinyEncoder(nn.Module):
    """Token + learned position embeddings → ``n_layers`` :class:`EncoderBlock` s → a per-token
    classifier over :data:`book.toy.orders.LABELS`.

    ``forward(ids, padding_mask)`` takes (batch, seq) int64 ids and the book's padding mask
    (``True`` = real token) and returns logits (batch, seq, n_labels); with
    ``need_weights=True`` it returns ``(logits, [weights of layer 0, layer 1, …])``, each
    (batch, n_heads, seq, seq). ``seed`` makes the initial weights reproducible (``None``:
    use the global generator). ``d_ff`` defaults to ``2 * d_model``.
    """

    def __init__(self, vocab_size: int = len(VOCAB), n_labels: int = len(LABELS), *,
                 d_model: int = 64, n_heads: int = 4, n_layers: int = 2, d_ff: int | None = None,
                 max_len: int = 64, norm: str = "pre", init: str = "xavier",
                 dropout: float = 0.0, attention: str = "scratch", positions: bool = True,
                 seed: int | None = 0):
        super().__init__()
        vocab_size = validate.integer("vocab_size", vocab_size, low=2)
        n_labels = validate.integer("n_labels", n_labels, low=2)
        d_model = validate.integer("d_model", d_model, low=1)
        n_layers = validate.integer("n_layers", n_layers, low=1, high=64)
        d_ff = 2 * d_model if d_ff is None else validate.integer("d_ff", d_ff, low=1)
        max_len = validate.integer("max_len", max_len, low=1)
        validate.choice("init", init, INITS)
        validate.boolean("positions", positions)
        self.config = EncoderConfig(vocab_size=vocab_size, n_labels=n_labels, d_model=d_model,
                                    n_heads=n_heads, n_layers=n_layers, d_ff=d_ff,
                                    max_len=max_len, norm=norm, init=init, dropout=dropout,
                                    attention=attention, positions=positions)
        if seed is not None:
            seed = validate.seed(seed)
        # a seed gives the same weights every time and leaves the global generator alone;
        # seed=None draws from (and advances) the global generator, like any nn.Module
        with torch.random.fork_rng(devices=[]) if seed is not None else contextlib.nullcontext():
            if seed is not None:
                torch.manual_seed(seed)
            self.embed = nn.Embedding(vocab_size, d_model)
            self.pos = nn.Embedding(max_len, d_model) if positions else None
            self.blocks = nn.ModuleList(
                EncoderBlock(d_model, n_heads, d_ff, norm, dropout, attention)
                for _ in range(n_layers))
            self.final_norm = nn.LayerNorm(d_model) if norm == "pre" else nn.Identity()
            self.head = nn.Linear(d_model, n_labels)
            self._initialise(init)

    def _initialise(self, init: str) -> None:
        if init == "torch":
            return
        with torch.no_grad():
            for module in self.modules():
                if isinstance(module, nn.Linear):
                    if init == "xavier":
                        nn.init.xavier_uniform_(module.weight)
                    else:
                        nn.init.normal_(module.weight, std=0.02 if init == "small" else 1.0)
                    if module.bias is not None:
                        nn.init.zeros_(module.bias)
            if init == "small":
                for emb in (self.embed, self.pos):
                    if emb is not None:
                        nn.init.normal_(emb.weight, std=0.02)

    @property
    def n_heads(self) -> int:
        return self.config.n_heads

    @property
    def n_layers(self) -> int:
        return self.config.n_layers

    def extra_repr(self) -> str:
        c = self.config
        return (f"d_model={c.d_model}, n_heads={c.n_heads}, n_layers={c.n_layers}, "
                f"norm={c.norm!r}, init={c.init!r}, attention={c.attention!r}, "
                f"parameters={sum(p.numel() for p in self.parameters())}")

    def forward(self, ids, padding_mask=None, need_weights: bool = False):
        ids = validate.token_ids("ids", ids, self.config.vocab_size, ndim=2,
                                 max_len=self.config.max_len)
        validate.boolean("need_weights", need_weights)
        seq = ids.shape[1]
        x = self.embed(ids)
        if self.pos is not None:
            x = x + self.pos.weight[:seq]
        maps = []
        for block in self.blocks:
            x, weights = block(x, padding_mask, need_weights)
            maps.append(weights)
        logits = self.head(self.final_norm(x))
        return (logits, maps) if need_weights else logits


def check_encoder(model, name: str = "model") -> TinyEncoder:
    """Return ``model`` if it is a :class:`TinyEncoder`, else raise saying how to get one."""
    if not isinstance(model, TinyEncoder):
        raise TypeError(f"{name} must be a book.toy.model.TinyEncoder (e.g. "
                        f"book.toy.train.pretrained()), got {type(model).__name__}")
    return model


@contextlib.contextmanager
def eval_mode(model: nn.Module):
    """Run the block with ``model`` in evaluation mode (no dropout) and without gradients,
    then put back the training mode it had::

        with eval_mode(model):
            logits = model(batch.ids, batch.padding_mask)
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch nn.Module, got {type(model).__name__}")
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        model.train(was_training)
