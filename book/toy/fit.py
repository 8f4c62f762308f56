"""Training the toy transformer: :func:`fit` and the :class:`History` it returns.

:func:`fit` trains a :class:`book.toy.model.TinyEncoder` in place with AdamW (warm-up, cosine
decay, optional gradient clipping), shows a progress bar (:mod:`book.kit.progress`: silent
in the book build) and records the loss curve, test accuracy and, on request, per-layer
activation RMS and gradient norms. A run whose loss or activations stop being finite stops
there and is marked ``diverged``: the attention layer refuses NaN/inf input with
:class:`book.kit.validate.NonFiniteError`, which :func:`fit` catches.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from book.kit import memo, validate
from book.kit.progress import bar as progress_bar
from book.toy import orders as orders_mod
from book.toy.model import TinyEncoder, check_encoder
from book.toy.orders import IGNORE_INDEX, Order
from book.toy.probe import accuracy


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


@memo.shared(rng=False, mutates="model")
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
    model = check_encoder(model)
    train = orders_mod.as_orders("train", train)
    test = None if test is None else orders_mod.as_orders("test", test)
    steps = validate.integer("steps", steps, low=1)
    batch_size = validate.integer("batch_size", batch_size, low=1)
    lr = validate.real("lr", lr, low=0.0)
    weight_decay = validate.real("weight_decay", weight_decay, low=0.0)
    warmup = validate.integer("warmup", warmup, low=0)
    if max_grad_norm is not None:
        max_grad_norm = validate.real("max_grad_norm", max_grad_norm, low=0.0)
    seed = validate.seed(seed)
    eval_every = steps if eval_every is None else validate.integer("eval_every", eval_every,
                                                                   low=1)
    record_every = validate.integer("record_every", record_every, low=1)
    longest = max(len(o) for o in train)
    if longest > model.config.max_len:
        raise ValueError(f"the longest training order has {longest} tokens but the model's "
                         f"max_len is {model.config.max_len}; build it with max_len>={longest}")

    if threads is not None:
        threads = validate.integer("threads", threads, low=1)
    validate.boolean("bucket", bucket)
    validate.boolean("record_norms", record_norms)
    validate.boolean("progress", progress)
    history = History(config={"steps": steps, "batch_size": batch_size, "lr": lr, "bucket": bucket,
                              "weight_decay": weight_decay, "warmup": warmup,
                              "max_grad_norm": max_grad_norm, "seed": seed,
                              "model": model.config.as_dict()})
    data = orders_mod.collate(train)
    lengths = data.padding_mask.sum(1)
    rng = np.random.default_rng(seed)
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    schedule = _schedule(optimiser, warmup, steps)
    names = ["embedding"] + [f"layer {i}" for i in range(model.n_layers)]
    outputs: dict[str, torch.Tensor] = {}
    hooks = _norm_hooks(model, history, names, outputs) if record_norms else []
    queue: list[torch.Tensor] = []
    old_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    start = time.perf_counter()
    bar = progress_bar(steps, "training", show=progress, leave=True)
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
                loss, value = _loss(model, ids, mask, data.labels[pick, :width])
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
                    history.test_accuracy.append(accuracy(model, test))  # restores train()
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


def _schedule(optimiser, warmup: int, steps: int):
    """Linear warm-up over ``warmup`` steps, then cosine decay to 10 % of the base rate."""
    def rate(step):   # step counts from 0
        if step < warmup:
            return (step + 1) / warmup
        done = (step - warmup) / max(1, steps - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * done))

    return torch.optim.lr_scheduler.LambdaLR(optimiser, rate)


def _norm_hooks(model: TinyEncoder, history: History, names: list[str],
                outputs: dict[str, torch.Tensor]) -> list:
    """Hooks that keep the input of block 0 (token + position) and each block's output in
    ``outputs`` for :func:`_record`; ``history`` gets an empty curve per name."""
    history.activation_rms = {n: [] for n in names}
    history.grad_norm = {n: [] for n in names}
    hooks = [model.blocks[0].register_forward_pre_hook(
        lambda mod, args: outputs.__setitem__("embedding", args[0]))]
    for i, block in enumerate(model.blocks):
        hooks.append(block.register_forward_hook(
            lambda mod, inp, out, key=f"layer {i}": outputs.__setitem__(key, out[0])))
    return hooks


def _loss(model: TinyEncoder, ids, mask, labels) -> tuple[torch.Tensor | None, float]:
    """(loss, its value) of one batch; (None, NaN) when the attention layer refuses a
    non-finite activation (:class:`book.kit.validate.NonFiniteError`): the run has diverged."""
    try:
        logits = model(ids, mask)
    except validate.NonFiniteError:
        return None, math.nan
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                           ignore_index=IGNORE_INDEX)
    return loss, loss.item()


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
