"""The book's default run of the toy transformer.

The code lives by concern — :mod:`book.toy.model` (:class:`~book.toy.model.TinyEncoder`,
:func:`~book.toy.model.eval_mode`), :mod:`book.toy.fit` (:func:`~book.toy.fit.fit`,
:class:`~book.toy.fit.History`), :mod:`book.toy.probe` (``evaluate``, ``predict``,
``attention_maps``, ``attention_entropy``, ``ablated``, ``ablation_scores`` …). This module holds
what is the book's own: the default data, model and training settings (:data:`DATA`,
:data:`MODEL`, :data:`FIT`, typed :class:`~book.kit.config.Config` dataclasses),
:func:`train_default` (well under 20 s on two CPU cores), checkpoints (:func:`save`, :func:`load`,
:func:`pretrained`) and
:func:`benchmark`.
"""

from __future__ import annotations

import argparse
import inspect
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from book.kit import memo, validate
from book.kit.config import Config
from book.toy import baselines
from book.toy import orders as orders_mod
from book.toy.fit import History, fit
from book.toy.model import TinyEncoder, check_encoder
from book.toy.orders import Order
from book.toy.probe import evaluate

__all__ = [
    "CHECKPOINT", "DATA", "FIT", "MODEL", "DataConfig", "FitConfig", "ModelConfig", "benchmark",
    "chapter_data", "checkpoint_meta", "default_data", "load", "make_checkpoint", "pretrained",
    "save", "train_default",
]



# ---- the book's default run, checkpoints, benchmark ------------------------------------------

@dataclass(frozen=True, eq=False)   # eq: Config compares like a dict
class DataConfig(Config):
    """The book's data set: ``n_orders`` generated orders, ``test_fraction`` held out."""

    n_orders: int = 6000
    seed: int = 0
    test_fraction: float = 0.2


@dataclass(frozen=True, eq=False)   # eq: Config compares like a dict
class ModelConfig(Config):
    """The book's model: keyword arguments of :class:`TinyEncoder`."""

    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    norm: str = "pre"
    init: str = "xavier"
    attention: str = "scratch"
    seed: int = 0


@dataclass(frozen=True, eq=False)   # eq: Config compares like a dict
class FitConfig(Config):
    """The book's training run: keyword arguments of :func:`fit`."""

    steps: int = 500
    batch_size: int = 64
    lr: float = 5e-3
    seed: int = 0


DATA = DataConfig()
MODEL = ModelConfig()
FIT = FitConfig()


@memo.shared(rng=False)
def default_data() -> tuple[list[Order], list[Order]]:
    """The book's (train, test) split: :data:`DATA` orders from :func:`book.toy.orders.generate`."""
    orders = orders_mod.generate(DATA.n_orders, seed=DATA.seed)
    return orders_mod.train_test_split(orders, DATA.test_fraction, seed=DATA.seed)


def chapter_data(data=None, test_orders: int | None = None) -> tuple[list[Order], list[Order]]:
    """``data`` (a (train, test) pair of order lists; default :func:`default_data`) as two
    lists, the test side cut to its first ``test_orders`` orders (None: all of them)."""
    if data is None:
        data = default_data()
    if isinstance(data, (str, bytes)) or not isinstance(data, Sequence) or len(data) != 2:
        raise TypeError("data must be a (train, test) pair of order lists, e.g. "
                        f"book.toy.train.default_data(), got {type(data).__name__}")
    train_orders = orders_mod.as_orders("data[0] (train)", data[0])
    test_list = orders_mod.as_orders("data[1] (test)", data[1])
    if test_orders is not None:
        test_list = test_list[:validate.integer("test_orders", test_orders, low=1)]
    return train_orders, test_list


def train_default(progress: bool = True, **overrides) -> tuple[TinyEncoder, History]:
    """Train the book's default model (:data:`MODEL`, :data:`FIT`) on :func:`default_data`.

    Keyword ``overrides`` go to :class:`TinyEncoder` and/or :func:`fit`, replacing the
    defaults, e.g. ``norm="post"``, ``init="large"``, ``steps=300``, ``max_grad_norm=None``,
    ``threads=1``; ``seed=`` sets both the initial weights and the batch order.
    """
    validate.boolean("progress", progress)
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
    model = check_encoder(model)
    path = validate.path("path", path)
    if meta is not None and not isinstance(meta, dict):
        raise TypeError(f"meta must be a dict, got {type(meta).__name__}")
    torch.save({"config": model.config.as_dict(), "state_dict": model.state_dict(),
                "meta": meta or {}}, path)
    return path


def checkpoint_meta(path=None) -> dict:
    """The ``meta`` dict stored by :func:`save` (default: the shipped checkpoint)."""
    path = validate.path("path", CHECKPOINT if path is None else path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    return dict(torch.load(path, map_location="cpu", weights_only=True).get("meta", {}))


def load(path) -> TinyEncoder:
    """A :class:`TinyEncoder` rebuilt from a file written by :func:`save` (eval mode)."""
    path = validate.path("path", path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}; train one with "
                                "book.toy.train.train_default() and book.toy.train.save(model, "
                                "path)")
    blob = torch.load(path, map_location="cpu", weights_only=True)
    config = dict(blob["config"])
    model = TinyEncoder(config.pop("vocab_size"), config.pop("n_labels"), **config)
    model.load_state_dict(blob["state_dict"])
    return model.eval()


CHECKPOINT = Path(__file__).resolve().parents[2] / "assets" / "orders_tiny.pt"


def pretrained(path=None) -> TinyEncoder:
    """The book's default model, already trained: :func:`train_default` with no overrides,
    saved to ``assets/orders_tiny.pt`` (``tests/toy/test_train.py`` retrains it and checks that
    the training code reproduces it). Loads in milliseconds, so chapters that only *look* at
    a trained model need not spend ~10 s training one."""
    return load(CHECKPOINT if path is None else path)


def benchmark(threads: int = 2, progress: bool = False) -> dict:
    """Train the default model with ``threads`` CPU threads; print and return the held-out
    accuracy, the training wall time and the baselines' accuracies."""
    threads = validate.integer("threads", threads, low=1)
    validate.boolean("progress", progress)
    model, history = train_default(progress=progress, threads=threads)
    train, test = default_data()
    result = {"accuracy": history.final_accuracy, "wall_time_s": history.wall_time,
              "steps": history.steps, "threads": threads,
              "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
              **evaluate(model, test)}
    result["baselines"] = baselines.baselines(train, test)
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
               "torch": str(torch.__version__), "data": DATA.as_dict(), "fit": FIT.as_dict(),
               "model": MODEL.as_dict()})
    return model, history


def _main(argv=None) -> None:
    """``python -m book.toy.train [--threads N] [--save]``: benchmark; ``--save`` also
    rewrites the shipped checkpoint (assets/orders_tiny.pt, trained with 1 thread)."""
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
