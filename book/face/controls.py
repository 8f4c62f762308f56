"""An explorer's controls, written once for its two interactive faces.

A chapter describes what the reader varies as a list of :class:`Slider`, :class:`Choice` and
:class:`TextBox`; the live face makes ipywidgets of them (:func:`book.face.live.widgets_for`)
and the in-page face the page's HTML inputs (:func:`book.face.inpage.page_controls`). Neither
face is built from the other: both read this list, and the figure both start from is drawn by
the chapter's own ``_X_plot`` from the data function.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from book.kit import validate


def check_name(name) -> str:
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"a control's name must be an identifier such as 'd_k', got {name!r}")
    return name


def check_label(label) -> str:
    if not isinstance(label, str) or not label.strip():
        raise TypeError(f"a control's label must be the reader's text from the string table, "
                        f"got {label!r}")
    return label


@dataclass(frozen=True, kw_only=True)
class Slider:
    """An integer from ``low`` to ``high`` in steps of ``step``; ``page_high`` raises the top on
    the page, which computes further than a kernel redraws in 50 ms; ``page_menu``: the page
    offers the values in a menu (a layer of two, say)."""
    name: str
    label: str
    low: int
    high: int
    value: int
    step: int = 1
    page_high: int | None = None
    page_menu: bool = False

    def __post_init__(self):
        check_name(self.name), check_label(self.label)
        validate.integer("low", self.low)
        validate.integer("high", self.high, low=self.low)
        validate.integer("step", self.step, low=1, high=max(1, self.high - self.low))
        validate.integer("value", self.value, low=self.low, high=self.high)
        if self.page_high is not None:
            validate.integer("page_high", self.page_high, low=self.high)


@dataclass(frozen=True, kw_only=True)
class Choice:
    """One of ``options``, (value, what the reader reads) pairs; ``slider``: the live face
    shows a slider over them (an ordered choice such as a head count) instead of a menu."""
    name: str
    label: str
    options: Sequence[tuple[object, str]]
    value: object
    slider: bool = False

    def __post_init__(self):
        check_name(self.name), check_label(self.label)
        if isinstance(self.options, (str, bytes)) or not self.options or not all(
                isinstance(o, tuple) and len(o) == 2 and isinstance(o[1], str)
                for o in self.options):
            raise TypeError(f"choice {self.name!r}: options must be a non-empty list of "
                            f"(value, label) pairs, got {self.options!r}")
        validate.choice("value", self.value, [v for v, _ in self.options])


@dataclass(frozen=True, kw_only=True)
class TextBox:
    """A line the reader types; ``width`` is the live text box's CSS width."""
    name: str
    label: str
    value: str
    width: str | None = None

    def __post_init__(self):
        check_name(self.name), check_label(self.label)
        if not isinstance(self.value, str):
            raise TypeError(f"text box {self.name!r}: value must be a str, got "
                            f"{type(self.value).__name__}")


Control = Slider | Choice | TextBox


def check(controls) -> list:
    """``controls`` as a list, each a :class:`Slider`, :class:`Choice` or :class:`TextBox`,
    their names distinct."""
    if isinstance(controls, (str, bytes)) or not isinstance(controls, Sequence) or not controls:
        raise TypeError(f"controls must be a non-empty list of Slider, Choice and TextBox, got "
                        f"{controls!r}")
    controls = list(controls)
    for c in controls:
        if not isinstance(c, Control):
            raise TypeError(f"each control must be a book.face.controls Slider, Choice or "
                            f"TextBox, got {c!r}")
    names = [c.name for c in controls]
    if len(set(names)) != len(names):
        raise ValueError(f"control names repeat in {names}; give each control its own name")
    return controls


def first_values(controls) -> dict:
    """{name: value} of the controls' first state (what both faces draw first)."""
    return {c.name: c.value for c in check(controls)}
