"""Training stability (chapter 5): why a Transformer's loss can stay flat, measured.

The chapter trains small :class:`book.toy.model.TinyEncoder` models on the takeout-order task
with the switches that decide whether training works: where the LayerNorm goes (``norm``:
"pre", "post", "none"), how the weights start (``init``: "xavier", "torch", "small",
"large"), the depth and the learning rate. Everything is trained the same way
(:data:`SETTINGS`: no warm-up and **no gradient clipping**, so instability can show itself)
and recorded as a :class:`Run`: the loss of every step, held-out accuracy, and per-layer
activation RMS and gradient norms every few steps.

:func:`run` trains one configuration; :func:`at_init` measures the per-layer norms of a fresh
model (one forward and backward pass, no update); :func:`chance_loss` is the loss of a model
that has learnt nothing. Same arguments and ``threads=1`` give bit-identical numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from book.kit import i18n, validate
from book.kit.config import Config
from book.toy import baselines, orders, train
from book.toy.fit import fit
from book.toy.model import TinyEncoder
from book.toy.orders import LABELS, Order


@dataclass(frozen=True, eq=False)   # eq: Config compares like a dict
class StabilitySettings(Config):
    """The chapter's model and training run: small and short enough to train several on a
    page; no warm-up and no gradient clipping, so that instability can show itself."""

    d_model: int = 32
    n_heads: int = 4
    steps: int = 90
    batch_size: int = 32
    lr: float = 1e-2
    warmup: int = 0
    max_grad_norm: float | None = None
    record_every: int = 5


SETTINGS = StabilitySettings()
TEST_ORDERS = 400       # held-out orders scored at the end of each run (of the 1209)
INIT_ORDERS = 512       # at_init draws its one batch from these first training orders
NORM_NAMES = {"pre": "Pre-LN", "post": "Post-LN", "none": "no LayerNorm"}
INIT_NAMES = {"xavier": "Xavier", "torch": "PyTorch default", "small": "N(0, 0.02)",
              "large": "N(0, 1)"}
MAX_LAYERS = 12


def chance_loss(n_labels: int = len(LABELS)) -> float:
    """Cross-entropy of a model that gives all ``n_labels`` labels the same probability:
    ln(n_labels). A loss that stays here means the model has learnt nothing."""
    return math.log(validate.integer("n_labels", n_labels, low=1))


def norm_name(norm: str) -> str:
    """The reader's name of a LayerNorm placement (:data:`NORM_NAMES`, in the book's language)."""
    return i18n.tr("ch05.norm_" + validate.choice("norm", norm, tuple(NORM_NAMES)))


def init_name(init: str) -> str:
    """The reader's name of an initialisation (:data:`INIT_NAMES`, in the book's language)."""
    return i18n.tr("ch05.init_" + validate.choice("init", init, tuple(INIT_NAMES)))


def part_name(part: str) -> str:
    """The reader's name of a recorded part ("embedding", "layer 0", …) in the book's
    language."""
    if part == "embedding":
        return i18n.tr("ch05.embedding")
    if part.startswith("layer ") and part[6:].isdigit():
        return i18n.tr("ch05.layer", i=int(part[6:]))
    raise ValueError(f"part must be 'embedding' or 'layer i', got {part!r}")


def label_name(label: str) -> str:
    """The reader's name of an order label of :data:`book.toy.orders.LABELS` ("normal" → 正常)."""
    return orders.label_name(label)   # the book's one set of names (book.toy.orders)


def config_label(norm: str, init: str, n_layers: int, lr: float | None = None) -> str:
    """Human-readable name of a configuration, e.g. "Post-LN · Xavier · 6 layers · lr 0.01"
    (``lr=None``: an untrained model, no learning rate in the name)."""
    validate.choice("norm", norm, tuple(NORM_NAMES))
    validate.choice("init", init, tuple(INIT_NAMES))
    n_layers = validate.integer("n_layers", n_layers, low=1, high=MAX_LAYERS)
    layers = i18n.tr("ch05.one_layer") if n_layers == 1 else i18n.tr("ch05.n_layers", n=n_layers)
    label = f"{norm_name(norm)} · {init_name(init)} · {layers}"
    if lr is None:
        return label
    return f"{label} · lr {validate.real('lr', lr, low=0.0):g}"


@dataclass
class Run:
    """One training run of :func:`run`. ``loss[i]`` is the loss of step ``i + 1``;
    ``activation_rms["layer i"][j]`` and ``grad_norm["layer i"][j]`` were recorded at step
    ``norm_steps[j]`` ("embedding" is the input of layer 0). ``accuracy`` is the held-out
    token accuracy at the end (None if the run diverged)."""

    norm: str
    init: str
    n_layers: int
    lr: float
    steps: int
    loss: list[float] = field(default_factory=list)
    norm_steps: list[int] = field(default_factory=list)
    activation_rms: dict[str, list[float]] = field(default_factory=dict)
    grad_norm: dict[str, list[float]] = field(default_factory=dict)
    accuracy: float | None = None
    diverged: bool = False
    wall_time: float = 0.0

    @property
    def key(self) -> tuple[str, str, int, float]:
        return (self.norm, self.init, self.n_layers, self.lr)

    @property
    def label(self) -> str:
        """e.g. "Post-LN · Xavier · 4 layers · lr 0.01" (no lr for :func:`at_init`)."""
        return config_label(self.norm, self.init, self.n_layers,
                            None if self.lr == 0 else self.lr)

    @property
    def layers(self) -> list[str]:
        """The recorded parts, input first: "embedding", "layer 0", … ."""
        return list(self.activation_rms)

    def final_loss(self, last: int = 20) -> float:
        """Mean loss of the last ``last`` steps (inf if the run diverged)."""
        if self.diverged:
            return math.inf
        last = validate.integer("last", last, low=1)
        return float(np.mean(self.loss[-last:]))

    def profile(self, what: str = "activation", when: str = "first") -> list[float]:
        """Per-layer values ("activation" RMS or "gradient" norm) at the "first" or the
        "last" recorded step, input first (empty if nothing was recorded)."""
        validate.choice("what", what, ("activation", "gradient"))
        validate.choice("when", when, ("first", "last"))
        table = self.activation_rms if what == "activation" else self.grad_norm
        index = 0 if when == "first" else -1
        return [values[index] for values in table.values() if values]


def run(norm: str, init: str, n_layers: int, lr: float = SETTINGS.lr, *,
        steps: int = SETTINGS.steps, data: tuple[Sequence[Order], Sequence[Order]] | None
        = None, seed: int = 0, threads: int | None = 1, progress: bool = False) -> Run:
    """Train one configuration with :data:`SETTINGS` (no warm-up, no clipping) and record it.

    ``data`` is a (train, test) pair (default :func:`book.toy.train.default_data`; only the first
    :data:`TEST_ORDERS` test orders are scored). ``seed`` sets the initial weights and the
    batch order; ``threads=1`` makes the run bit-identical from one call to the next.
    """
    config_label(norm, init, n_layers, lr)   # validates
    steps = validate.integer("steps", steps, low=1)
    train_orders, test_orders = train.chapter_data(data, TEST_ORDERS)
    model = TinyEncoder(d_model=SETTINGS.d_model, n_heads=SETTINGS.n_heads,
                              n_layers=n_layers, norm=norm, init=init, seed=seed)
    history = fit(model, train_orders, test_orders, steps=steps,
                        batch_size=SETTINGS.batch_size, lr=lr, warmup=SETTINGS.warmup,
                        max_grad_norm=SETTINGS.max_grad_norm, seed=seed,
                        record_norms=True, record_every=SETTINGS.record_every,
                        threads=threads, progress=progress)
    return Run(norm=norm, init=init, n_layers=n_layers, lr=float(lr), steps=steps,
               loss=list(history.loss), norm_steps=list(history.norm_steps),
               activation_rms={k: list(v) for k, v in history.activation_rms.items()},
               grad_norm={k: list(v) for k, v in history.grad_norm.items()},
               accuracy=history.final_accuracy, diverged=history.diverged,
               wall_time=history.wall_time)


def at_init(norm: str, init: str, n_layers: int, *, data=None, seed: int = 0,
            threads: int | None = 1) -> Run:
    """Per-layer activation RMS and gradient norms of a freshly initialised model on one
    batch drawn from the first :data:`INIT_ORDERS` training orders: one forward and one
    backward pass, the weights are not updated. The
    returned :class:`Run` has one loss and one recorded step (``accuracy`` is None)."""
    config_label(norm, init, n_layers)
    train_orders, _ = train.chapter_data(data, TEST_ORDERS)
    model = TinyEncoder(d_model=SETTINGS.d_model, n_heads=SETTINGS.n_heads,
                              n_layers=n_layers, norm=norm, init=init, seed=seed)
    history = fit(model, train_orders[:INIT_ORDERS], None, steps=1,
                        batch_size=SETTINGS.batch_size,
                        lr=0.0, warmup=0, max_grad_norm=None, seed=seed, record_norms=True,
                        record_every=1, threads=threads, progress=False)
    return Run(norm=norm, init=init, n_layers=n_layers, lr=0.0, steps=1,
               loss=list(history.loss), norm_steps=list(history.norm_steps),
               activation_rms={k: list(v) for k, v in history.activation_rms.items()},
               grad_norm={k: list(v) for k, v in history.grad_norm.items()},
               diverged=history.diverged)


def smooth(values: Sequence[float], window: int = 10) -> np.ndarray:
    """Running mean over the last ``window`` values (fewer at the start); keeps inf/NaN
    where the input has them, so a divergence stays visible."""
    window = validate.integer("window", window, low=1)
    if isinstance(values, (str, bytes)):
        raise TypeError(f"values must be one curve of numbers, got the text {values!r}")
    try:
        x = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(f"values must be one curve of numbers (a list or 1-D array); could "
                        f"not convert {type(values).__name__}: {err}") from None
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"values must be one non-empty curve (1-D), got shape {x.shape}")
    out = np.empty_like(x)
    for i in range(len(x)):
        out[i] = x[max(0, i - window + 1): i + 1].mean()
    return out


def frequency_baseline(data=None, test_orders: int | None = TEST_ORDERS) -> dict:
    """What the label frequencies alone are worth (:func:`book.toy.baselines.label_frequencies`,
    chapter 4b's number too), on the first ``test_orders`` test orders: by default the
    :data:`TEST_ORDERS` that every run of this chapter is scored on; None: all of them, as
    chapter 4b scores them."""
    return baselines.label_frequencies(*train.chapter_data(data, test_orders))


# --- used by the explorers of the chapter modules ----------------------------------------

LOSS_SMOOTHING = 10  # the curves show a running mean over this many steps


def stability_data(run) -> dict:
    """What the stability explorer draws for one :class:`book.studies.stability.Run`: the
    running-mean
    loss per step, and per layer the activation RMS and gradient norm at the first and the
    last recorded step (empty lists if the run diverged before anything was recorded)."""

    if not isinstance(run, Run):
        raise TypeError(f"run must be a book.studies.stability.Run, got {type(run).__name__}")
    steps = list(range(1, len(run.loss) + 1))
    loss = smooth(run.loss, LOSS_SMOOTHING)
    last = run.norm_steps[-1] if run.norm_steps else None
    if run.diverged:
        verdict = i18n.tr("ch05.diverged", step=len(run.loss), loss=run.loss[-1])
    else:
        verdict = i18n.tr("ch05.verdict", loss=run.final_loss(), accuracy=100 * run.accuracy)
    return {"label": run.label, "steps": steps, "loss": loss, "layers": run.layers,
            "act_first": run.profile("activation", "first"),
            "act_last": run.profile("activation", "last"),
            "grad_first": run.profile("gradient", "first"),
            "grad_last": run.profile("gradient", "last"), "last_step": last,
            "title": i18n.tr("ch05.run_title", label=run.label, verdict=verdict)}
