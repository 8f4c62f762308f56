"""A tiny transformer encoder for the takeout-order task, and the tools to train and open it.

:class:`TinyEncoder` is built from the book's own :class:`book.mha.MultiHeadSelfAttention`
(``attention="scratch"``, the default) or its fused twin
:class:`~book.mha.MultiHeadSelfAttentionSDPA` (``attention="sdpa"``: same weights; measured
only about 5 % faster at this size on a CPU, so the default runs the book's own code).
Switches for the pitfalls chapters:

* ``norm="pre"`` (LayerNorm before each sub-layer), ``"post"`` (after the residual sum, as in
  the 2017 paper) or ``"none"``;
* ``init="xavier"``, ``"torch"`` (PyTorch's defaults), ``"small"`` (N(0, 0.02)) or ``"large"``
  (N(0, 1): every linear layer multiplies the signal by about √d_model);
* ``positions=False`` drops the positional embeddings (the model then sees a bag of words).

:func:`fit` trains with a tqdm progress bar and returns a :class:`History` (loss curve, test
accuracy, wall time, per-layer activation and gradient norms on request). :func:`accuracy`,
:func:`evaluate`, :func:`predict`, :func:`attention_maps`, :func:`attention_entropy` and
:func:`head_ablation` are what a chapter calls on a trained model; :func:`train_default` trains
the book's model in well under 20 s on two CPU cores; :func:`benchmark` measures it.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from . import orders as orders_mod
from . import validate
from .mha import MultiHeadSelfAttention, MultiHeadSelfAttentionSDPA
from .orders import IGNORE_INDEX, LABELS, NONE, VOCAB, Order

NORMS = ("pre", "post", "none")
INITS = ("xavier", "torch", "small", "large")
ATTENTIONS = ("scratch", "sdpa")


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
        if attention in ATTENTIONS:
            layer = {"sdpa": MultiHeadSelfAttentionSDPA, "scratch": MultiHeadSelfAttention}
            self.attn = layer[attention](d_model, n_heads, dropout=dropout)
        else:  # a variant from the "beyond" chapter: 'window-2', 'dilated-2x2', 'linear', …
            from .beyond import VariantAttention, parse_spec

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
    classifier over :data:`book.orders.LABELS`.

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
        if not isinstance(positions, bool):
            raise TypeError(f"positions must be True or False, got {positions!r}")
        self.config = {"vocab_size": vocab_size, "n_labels": n_labels, "d_model": d_model,
                       "n_heads": n_heads, "n_layers": n_layers, "d_ff": d_ff,
                       "max_len": max_len, "norm": norm, "init": init, "dropout": dropout,
                       "attention": attention, "positions": positions}
        if seed is not None:
            seed = validate.integer("seed", seed, low=0)
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
        return self.config["n_heads"]

    @property
    def n_layers(self) -> int:
        return self.config["n_layers"]

    def extra_repr(self) -> str:
        c = self.config
        return (f"d_model={c['d_model']}, n_heads={c['n_heads']}, n_layers={c['n_layers']}, "
                f"norm={c['norm']!r}, init={c['init']!r}, attention={c['attention']!r}, "
                f"parameters={sum(p.numel() for p in self.parameters())}")

    def forward(self, ids, padding_mask=None, need_weights: bool = False):
        if not isinstance(ids, torch.Tensor) or ids.dtype != torch.long or ids.ndim != 2:
            raise TypeError("ids must be a (batch, seq) torch.long tensor of token ids, e.g. "
                            "book.orders.collate(orders).ids")
        seq = ids.shape[1]
        if seq > self.config["max_len"]:
            raise ValueError(f"sequence length {seq} is longer than max_len="
                             f"{self.config['max_len']}; build the model with a larger max_len")
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.config["vocab_size"]):
            raise ValueError(f"ids must lie in 0..{self.config['vocab_size'] - 1} (the "
                             "vocabulary); encode tokens with book.orders.encode")
        x = self.embed(ids)
        if self.pos is not None:
            x = x + self.pos.weight[:seq]
        maps = []
        for block in self.blocks:
            x, weights = block(x, padding_mask, need_weights)
            maps.append(weights)
        logits = self.head(self.final_norm(x))
        return (logits, maps) if need_weights else logits


def _model(model) -> TinyEncoder:
    if not isinstance(model, TinyEncoder):
        raise TypeError(f"model must be a book.train.TinyEncoder, got {type(model).__name__}")
    return model


# ---- training ------------------------------------------------------------------------------

@dataclass
class History:
    """What :func:`fit` measured. ``loss[i]`` is the training loss of step ``i + 1``;
    ``test_accuracy[j]`` was measured after step ``test_steps[j]``. ``activation_rms`` maps
    ``"embedding"`` (token + position, the input of layer 0) and ``"layer i"`` (the output of
    block i, i.e. the residual stream) to its RMS over real tokens, one value per recorded step
    (``norm_steps``); ``grad_norm`` holds the L2 norm of the gradient of the same part's
    parameters (before clipping). ``diverged`` is True if the loss (or an activation, which the
    attention layer refuses) became NaN/inf: training stopped there (that step's loss is
    recorded as NaN or inf) and the test set is not scored (``final_accuracy`` is None)."""

    loss: list[float] = field(default_factory=list)
    test_steps: list[int] = field(default_factory=list)
    test_accuracy: list[float] = field(default_factory=list)
    norm_steps: list[int] = field(default_factory=list)
    activation_rms: dict[str, list[float]] = field(default_factory=dict)
    grad_norm: dict[str, list[float]] = field(default_factory=dict)
    wall_time: float = 0.0
    steps: int = 0
    diverged: bool = False
    config: dict = field(default_factory=dict)

    @property
    def final_accuracy(self) -> float | None:
        return self.test_accuracy[-1] if self.test_accuracy else None

    def as_dict(self) -> dict:
        return asdict(self)


def _padded(orders: Sequence[Order]) -> orders_mod.Batch:
    return orders_mod.collate(orders)


def fit(model: TinyEncoder, train: Sequence[Order], test: Sequence[Order] | None = None, *,
        steps: int = 500, batch_size: int = 64, lr: float = 5e-3, weight_decay: float = 0.01,
        warmup: int = 50, max_grad_norm: float | None = 1.0, seed: int = 0,
        eval_every: int | None = None, record_norms: bool = False, record_every: int = 10,
        bucket: bool = True, progress: bool = True, threads: int | None = None) -> History:
    """Train ``model`` in place on ``train`` with AdamW and return its :class:`History`.

    Learning rate: linear warm-up over ``warmup`` steps, then cosine decay to 10 % of ``lr``.
    ``max_grad_norm=None`` turns gradient clipping off (the pitfalls chapter does, to let a
    bad initialisation show itself). ``seed`` fixes the batch order and dropout, so the same
    call on the same machine gives the same numbers. ``test`` (optional) is scored every
    ``eval_every`` steps (default: at the end only). ``record_norms`` records, every
    ``record_every`` steps, each layer's output RMS and gradient norm. ``threads`` sets
    ``torch.set_num_threads`` for the call. ``bucket`` batches orders of similar length
    together (less padding; see :func:`_epoch`). The bar (``tqdm.auto``) shows the loss.
    """
    from tqdm.auto import tqdm

    model = _model(model)
    train = orders_mod._orders("train", train)
    test = None if test is None else orders_mod._orders("test", test)
    steps = validate.integer("steps", steps, low=1)
    batch_size = validate.integer("batch_size", batch_size, low=1)
    lr = validate.real("lr", lr, low=0.0)
    weight_decay = validate.real("weight_decay", weight_decay, low=0.0)
    warmup = validate.integer("warmup", warmup, low=0)
    if max_grad_norm is not None:
        max_grad_norm = validate.real("max_grad_norm", max_grad_norm, low=0.0)
    seed = validate.integer("seed", seed, low=0)
    eval_every = steps if eval_every is None else validate.integer("eval_every", eval_every,
                                                                   low=1)
    record_every = validate.integer("record_every", record_every, low=1)
    longest = max(len(o) for o in train)
    if longest > model.config["max_len"]:
        raise ValueError(f"the longest training order has {longest} tokens but the model's "
                         f"max_len is {model.config['max_len']}; build it with max_len>={longest}")

    old_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(validate.integer("threads", threads, low=1))
    if not isinstance(bucket, bool):
        raise TypeError(f"bucket must be True or False, got {bucket!r}")
    history = History(config={"steps": steps, "batch_size": batch_size, "lr": lr, "bucket": bucket,
                              "weight_decay": weight_decay, "warmup": warmup,
                              "max_grad_norm": max_grad_norm, "seed": seed,
                              "model": dict(model.config)})
    data = _padded(train)
    lengths = data.padding_mask.sum(1)
    rng = np.random.default_rng(seed)
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)

    def rate(step):   # step counts from 0
        if step < warmup:
            return (step + 1) / warmup
        done = (step - warmup) / max(1, steps - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * done))

    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, rate)
    names = ["embedding"] + [f"layer {i}" for i in range(model.n_layers)]
    outputs: dict[str, torch.Tensor] = {}
    hooks = []
    if record_norms:
        history.activation_rms = {n: [] for n in names}
        history.grad_norm = {n: [] for n in names}
        hooks.append(model.blocks[0].register_forward_pre_hook(   # token + position
            lambda mod, args: outputs.__setitem__("embedding", args[0])))
        for i, block in enumerate(model.blocks):
            hooks.append(block.register_forward_hook(
                lambda mod, inp, out, key=f"layer {i}": outputs.__setitem__(key, out[0])))
    queue: list[torch.Tensor] = []
    start = time.perf_counter()
    bar = tqdm(total=steps, desc="training", disable=not progress, leave=True)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model.train()
            for step in range(steps):
                if not queue:
                    queue = _epoch(rng, lengths, batch_size, bucket)
                pick = queue.pop()
                width = int(lengths[pick].max())
                ids, mask = data.ids[pick, :width], data.padding_mask[pick, :width]
                labels = data.labels[pick, :width]
                try:
                    logits = model(ids, mask)
                except ValueError as err:   # the attention layer refuses non-finite inputs
                    if "NaN or infinity" not in str(err):
                        raise
                    logits = None
                if logits is None:
                    value = math.nan
                else:
                    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                           labels.reshape(-1), ignore_index=IGNORE_INDEX)
                    value = loss.item()
                history.loss.append(value)
                history.steps = step + 1
                if not math.isfinite(value):
                    history.diverged = True
                    bar.set_postfix_str("loss is not finite: stopped")
                    break
                optimiser.zero_grad(set_to_none=True)
                loss.backward()
                if record_norms and step % record_every == 0:
                    _record(history, model, outputs, mask, names, step + 1)
                if max_grad_norm is not None:
                    nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
                optimiser.step()
                schedule.step()
                bar.update(1)
                if step % 20 == 0:
                    bar.set_postfix(loss=f"{value:.3f}")
                if test is not None and (step + 1) % eval_every == 0:
                    history.test_steps.append(step + 1)
                    history.test_accuracy.append(accuracy(model, test))
                    model.train()
    finally:
        bar.close()
        for hook in hooks:
            hook.remove()
        model.eval()
        torch.set_num_threads(old_threads)
    history.wall_time = time.perf_counter() - start
    if test is not None and history.test_steps[-1:] != [history.steps] and not history.diverged:
        history.test_steps.append(history.steps)
        history.test_accuracy.append(accuracy(model, test))
        history.wall_time = time.perf_counter() - start
    return history


def _epoch(rng: np.random.Generator, lengths: torch.Tensor, batch_size: int,
           bucket: bool) -> list[torch.Tensor]:
    """One epoch of batches (as index tensors), in the order they are to be popped.

    With ``bucket``, orders of similar length share a batch (shuffle, sort each run of
    8 batches by length, cut, shuffle the batches): less padding, so shorter attention
    matrices — the same data, a few times faster on a CPU.
    """
    index = rng.permutation(len(lengths))
    if bucket:
        chunk = 8 * batch_size
        index = np.concatenate([
            part[np.argsort(lengths[part].numpy(), kind="stable")]
            for part in np.split(index, range(chunk, len(index), chunk))])
    batches = [torch.from_numpy(index[i:i + batch_size])
               for i in range(0, len(index), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def _record(history, model, outputs, mask, names, step):
    history.norm_steps.append(step)
    real = mask.unsqueeze(-1)
    for name in names:
        out = outputs[name].detach()
        rms = torch.sqrt((out.pow(2) * real).sum() / (real.sum() * out.shape[-1]))
        history.activation_rms[name].append(float(rms))
    groups = [model.embed.parameters()] + [b.parameters() for b in model.blocks]
    if model.pos is not None:
        groups[0] = [model.embed.weight, model.pos.weight]
    for name, params in zip(names, groups, strict=True):
        grads = [p.grad.detach().reshape(-1) for p in params if p.grad is not None]
        history.grad_norm[name].append(float(torch.cat(grads).norm()) if grads else 0.0)


# ---- using a trained model --------------------------------------------------------------------

@torch.no_grad()
def evaluate(model: TinyEncoder, orders: Sequence[Order], batch_size: int = 512) -> dict:
    """Loss and accuracy over the scored tokens (ingredients and dishes) of ``orders``:
    ``{"loss", "accuracy", "ingredient_accuracy", "dish_accuracy", "tokens"}``."""
    model = _model(model)
    orders = orders_mod._orders("orders", orders)
    batch_size = validate.integer("batch_size", batch_size, low=1)
    was_training = model.training
    model.eval()
    loss_sum, hits, total = 0.0, {"ingredient": 0, "dish": 0}, {"ingredient": 0, "dish": 0}
    n_ing = len(orders_mod.INGREDIENT_LABELS)
    try:
        for batch in orders_mod.batches(orders, batch_size):
            logits = model(batch.ids, batch.padding_mask)
            scored = batch.labels != IGNORE_INDEX
            loss_sum += float(F.cross_entropy(logits[scored], batch.labels[scored],
                                              reduction="sum"))
            right = logits.argmax(-1) == batch.labels
            is_ing = scored & (batch.labels < n_ing)
            is_dish = scored & (batch.labels >= n_ing)
            hits["ingredient"] += int((right & is_ing).sum())
            hits["dish"] += int((right & is_dish).sum())
            total["ingredient"] += int(is_ing.sum())
            total["dish"] += int(is_dish.sum())
    finally:
        model.train(was_training)
    n = total["ingredient"] + total["dish"]
    if n == 0:
        raise ValueError("these orders have no ingredient or dish to score")
    return {"loss": loss_sum / n, "accuracy": (hits["ingredient"] + hits["dish"]) / n,
            "ingredient_accuracy": hits["ingredient"] / max(1, total["ingredient"]),
            "dish_accuracy": hits["dish"] / max(1, total["dish"]), "tokens": n}


def accuracy(model: TinyEncoder, orders: Sequence[Order]) -> float:
    """Share of the scored tokens (ingredients and dishes) of ``orders`` labelled right."""
    return evaluate(model, orders)["accuracy"]


def _one_order(order) -> Order:
    if isinstance(order, Order):
        return order
    if isinstance(order, str):
        return Order.from_text(order)
    if isinstance(order, Sequence) and all(isinstance(t, str) for t in order):
        return Order.from_tokens(order)
    raise TypeError(f"order must be an Order, an order string such as '一碗牛肉面，不要香菜' or a "
                    f"list of tokens, got {type(order).__name__}")


@torch.no_grad()
def predict(model: TinyEncoder, order) -> list[str]:
    """The model's label for each token of one order (an :class:`Order`, text or tokens);
    tokens that are not ingredients or dishes get :data:`book.orders.NONE`."""
    model = _model(model)
    order = _one_order(order)
    was_training = model.training
    model.eval()
    try:
        logits = model(torch.tensor([order.ids]), torch.ones(1, len(order), dtype=torch.bool))
    finally:
        model.train(was_training)
    n_ing = len(orders_mod.INGREDIENT_LABELS)
    out = []
    for cat, row in zip(order.categories, logits[0], strict=True):
        if cat == "ingredient":
            out.append(LABELS[int(row[:n_ing].argmax())])
        elif cat == "dish":
            out.append(LABELS[n_ing + int(row[n_ing:].argmax())])
        else:
            out.append(NONE)
    return out


@torch.no_grad()
def attention_maps(model: TinyEncoder, order) -> np.ndarray:
    """Attention weights for one order: (n_layers, n_heads, n_tokens, n_tokens), rows =
    queries, columns = keys, every row sums to 1 (eval mode, no dropout)."""
    model = _model(model)
    order = _one_order(order)
    was_training = model.training
    model.eval()
    try:
        _, maps = model(torch.tensor([order.ids]), None, need_weights=True)
    finally:
        model.train(was_training)
    return torch.stack([m[0] for m in maps]).numpy()


@torch.no_grad()
def attention_entropy(model: TinyEncoder, orders: Sequence[Order], *,
                      normalize: bool = False) -> np.ndarray:
    """Mean entropy (nats) of the attention rows of each layer and head: (n_layers, n_heads).

    Averaged over every real query of ``orders``, over real keys only. Low = sharp (a head
    that looks at one word), high = spread. ``normalize=True`` divides each row's entropy by
    log(number of real keys), its largest possible value, so 1 means uniform.
    """
    model = _model(model)
    orders = orders_mod._orders("orders", orders)
    was_training = model.training
    model.eval()
    total = torch.zeros(model.n_layers, model.n_heads, dtype=torch.float64)
    count = 0
    try:
        for batch in orders_mod.batches(orders, 256):
            _, maps = model(batch.ids, batch.padding_mask, need_weights=True)
            w = torch.stack(maps).double()                   # (layers, batch, heads, q, k)
            ent = -(w * torch.log(w.clamp_min(1e-30))).sum(-1)  # (layers, batch, heads, q)
            if normalize:
                n_keys = batch.padding_mask.sum(1).double()  # (batch,)
                ent = ent / torch.log(n_keys.clamp_min(2))[None, :, None, None]
            real = batch.padding_mask[None, :, None, :].double()
            total += (ent * real).sum(dim=(1, 3))
            count += int(batch.padding_mask.sum())
    finally:
        model.train(was_training)
    return (total / count).numpy()


@contextlib.contextmanager
def ablated(model: TinyEncoder, layer: int, head: int):
    """Inside the ``with`` block, head ``head`` of layer ``layer`` contributes nothing: its
    slice of the attention output is zeroed before the output projection ``w_o``."""
    model = _model(model)
    layer = validate.integer("layer", layer, low=0, high=model.n_layers - 1)
    head = validate.integer("head", head, low=0, high=model.n_heads - 1)
    attn = model.blocks[layer].attn
    lo, hi = head * attn.d_k, (head + 1) * attn.d_k

    def zero_head(module, args):
        context = args[0].clone()
        context[..., lo:hi] = 0
        return (context,)

    handle = attn.w_o.register_forward_pre_hook(zero_head)
    try:
        yield model
    finally:
        handle.remove()


def head_ablation(model: TinyEncoder, orders: Sequence[Order], layer: int, head: int) -> dict:
    """Accuracy and loss on ``orders`` with one head zeroed, next to the intact model's:
    ``{"accuracy", "loss", "base_accuracy", "base_loss", "accuracy_drop"}``."""
    base = evaluate(model, orders)
    with ablated(model, layer, head):
        cut = evaluate(model, orders)
    return {"accuracy": cut["accuracy"], "loss": cut["loss"], "base_accuracy": base["accuracy"],
            "base_loss": base["loss"], "accuracy_drop": base["accuracy"] - cut["accuracy"]}


def ablation_table(model: TinyEncoder, orders: Sequence[Order]) -> np.ndarray:
    """Accuracy with each head zeroed in turn: (n_layers, n_heads)."""
    model = _model(model)
    out = np.zeros((model.n_layers, model.n_heads))
    for layer in range(model.n_layers):
        for head in range(model.n_heads):
            with ablated(model, layer, head):
                out[layer, head] = accuracy(model, orders)
    return out


# ---- the book's default run, checkpoints, benchmark ------------------------------------------

DATA = {"n_orders": 6000, "seed": 0, "test_fraction": 0.2}
MODEL = {"d_model": 64, "n_heads": 4, "n_layers": 2, "norm": "pre", "init": "xavier",
         "attention": "scratch", "seed": 0}
FIT = {"steps": 500, "batch_size": 64, "lr": 5e-3, "seed": 0}


def default_data() -> tuple[list[Order], list[Order]]:
    """The book's (train, test) split: :data:`DATA` orders from :func:`book.orders.generate`."""
    orders = orders_mod.generate(DATA["n_orders"], seed=DATA["seed"])
    return orders_mod.train_test_split(orders, DATA["test_fraction"], seed=DATA["seed"])


def train_default(progress: bool = True, **overrides) -> tuple[TinyEncoder, History]:
    """Train the book's default model (:data:`MODEL`, :data:`FIT`) on :func:`default_data`.

    Keyword ``overrides`` go to :class:`TinyEncoder` and/or :func:`fit`, replacing the
    defaults, e.g. ``norm="post"``, ``init="large"``, ``steps=300``, ``max_grad_norm=None``,
    ``threads=1``; ``seed=`` sets both the initial weights and the batch order.
    """
    model_keys = set(inspect.signature(TinyEncoder).parameters) - {"vocab_size", "n_labels"}
    fit_keys = set(inspect.signature(fit).parameters) - {"model", "train", "test", "progress"}
    unknown = set(overrides) - model_keys - fit_keys
    if unknown:
        raise ValueError(f"unknown setting(s) {sorted(unknown)}; choose from the model's "
                         f"{sorted(model_keys)} or fit's {sorted(fit_keys)}")
    model_kw = {**MODEL, **{k: v for k, v in overrides.items() if k in model_keys}}
    fit_kw = {**FIT, **{k: v for k, v in overrides.items() if k in fit_keys}}
    train, test = default_data()
    model = TinyEncoder(**model_kw)
    history = fit(model, train, test, progress=progress, **fit_kw)
    return model, history


def save(model: TinyEncoder, path, meta: dict | None = None) -> Path:
    """Write the model's configuration and weights (and an optional ``meta`` dict of plain
    values, e.g. how it was trained) to ``path`` (a ``.pt`` file)."""
    model = _model(model)
    path = Path(path)
    if meta is not None and not isinstance(meta, dict):
        raise TypeError(f"meta must be a dict, got {type(meta).__name__}")
    torch.save({"config": model.config, "state_dict": model.state_dict(), "meta": meta or {}},
               path)
    return path


def checkpoint_meta(path=None) -> dict:
    """The ``meta`` dict stored by :func:`save` (default: the shipped checkpoint)."""
    path = Path(CHECKPOINT if path is None else path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    return dict(torch.load(path, map_location="cpu", weights_only=True).get("meta", {}))


def load(path) -> TinyEncoder:
    """A :class:`TinyEncoder` rebuilt from a file written by :func:`save` (eval mode)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}; train one with "
                                "book.train.train_default() and book.train.save(model, path)")
    blob = torch.load(path, map_location="cpu", weights_only=True)
    config = dict(blob["config"])
    model = TinyEncoder(config.pop("vocab_size"), config.pop("n_labels"), **config)
    model.load_state_dict(blob["state_dict"])
    return model.eval()


CHECKPOINT = Path(__file__).resolve().parent.parent / "assets" / "orders_tiny.pt"


def pretrained(path=None) -> TinyEncoder:
    """The book's default model, already trained: :func:`train_default` with no overrides,
    saved to ``assets/orders_tiny.pt`` (``tests/test_train.py`` retrains it and checks that
    the training code reproduces it). Loads in milliseconds, so chapters that only *look* at
    a trained model need not spend ~10 s training one."""
    return load(CHECKPOINT if path is None else path)


def benchmark(threads: int = 2, progress: bool = False) -> dict:
    """Train the default model with ``threads`` CPU threads; print and return the held-out
    accuracy, the training wall time and the baselines' accuracies."""
    import os

    threads = validate.integer("threads", threads, low=1)
    model, history = train_default(progress=progress, threads=threads)
    train, test = default_data()
    result = {"accuracy": history.final_accuracy, "wall_time_s": history.wall_time,
              "steps": history.steps, "threads": threads,
              "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
              **evaluate(model, test)}
    result["baselines"] = orders_mod.baselines(train, test)
    print(f"TinyEncoder {model.extra_repr()}")
    print(f"held-out token accuracy {result['accuracy']:.4f} after {history.steps} steps in "
          f"{history.wall_time:.1f} s on {threads} thread(s) (load average "
          f"{result['load_average']})")
    print("baselines (no attention):",
          ", ".join(f"{k} {v:.3f}" for k, v in result["baselines"].items()))
    return result


def make_checkpoint(path=None, threads: int = 1) -> tuple[TinyEncoder, History]:
    """Train the default model with ``threads`` threads and save it with its training record
    (default path: the shipped :data:`CHECKPOINT`). Same machine + same threads = the same
    weights bit for bit; another thread count or CPU gives slightly different weights and
    (measured) the same accuracy to within a few tenths of a percent."""
    threads = validate.integer("threads", threads, low=1)
    model, history = train_default(progress=False, threads=threads)
    save(model, CHECKPOINT if path is None else path,
         meta={"accuracy": history.final_accuracy, "steps": history.steps, "threads": threads,
               "torch": str(torch.__version__), "data": dict(DATA), "fit": dict(FIT),
               "model": dict(MODEL)})
    return model, history


def _main(argv=None) -> None:
    """``python -m book.train [--threads N] [--save]``: benchmark; ``--save`` also
    rewrites the shipped checkpoint (assets/orders_tiny.pt, trained with 1 thread)."""
    import argparse

    parser = argparse.ArgumentParser(description=_main.__doc__)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args(argv)
    benchmark(args.threads)
    if args.save:
        _, history = make_checkpoint()
        print(f"saved {CHECKPOINT} (held-out accuracy {history.final_accuracy:.4f})")


if __name__ == "__main__":
    _main()
