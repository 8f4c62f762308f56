"""The checkers of the hidden cases: each compares a returned output with the reference.

Run on the trusted side only (the teacher's process, never a sandbox): a checker is a function
of the decoded output that returns None when it is right, else why it is wrong, worded as a
:class:`~book.classroom.feedback.Text` so that the feedback can be given in the student's
language. An assignment's own checkers (:mod:`book.classroom.assignments`) are built from
:func:`checker`, :func:`as_array` and :class:`Wrong`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .feedback import Text as say

OUTPUT = say("classroom.what_output")
BYTES = say("classroom.what_bytes")


def as_array(output, shape=None, what=OUTPUT):
    """``output`` as an array of ``shape`` (when given); else :class:`Wrong`, saying why."""
    if isinstance(output, list):
        raise Wrong(say("classroom.sequence_not_array", what=what, n=len(output)))
    if output is None or isinstance(output, str):
        raise Wrong(say("classroom.none_not_array" if output is None
                        else "classroom.string_not_array", what=what))
    arr = np.asarray(output)
    if shape is not None and arr.shape != tuple(shape):
        raise Wrong(say("classroom.wrong_shape", what=what, got=arr.shape,
                        expected=tuple(shape)))
    return arr


class Wrong(Exception):
    """Raised by a checker's body: its argument says what is wrong with the output."""


def checker(body: Callable[[object], None]) -> Callable[[object], str | None]:
    """A check from ``body``, which raises :class:`Wrong` where the output is wrong."""
    def check(output):
        try:
            body(output)
        except Wrong as wrong:
            return wrong.args[0]
        except (TypeError, ValueError) as error:
            return say("classroom.not_comparable", error=str(error))
        return None
    return check


# A correct answer computed in float32 passes: its error is a few float32 roundings (~1e-7
# relative) of each intermediate, except where the inputs are large: scores near 1000 are
# rounded to float32 by up to 3e-5, which moves a softmax weight p by up to
# p(1 - p) * 6e-5 <= 1.5e-5 (measured: 1.2e-5), a quarter of what is accepted there.
# Mistakes (no scaling, the wrong axis, a mask ignored) differ by a hundredth or more.
FLOAT32_RTOL = 1e-4
FLOAT32_ATOL = 1e-5


def close_to(expected, *, rtol: float = FLOAT32_RTOL, atol: float = FLOAT32_ATOL,
             what: str = OUTPUT, like=()):
    """Right when within float32 precision of ``expected``. ``like`` lists typical wrong
    answers as (their output, a hint): an output that equals one of them (and not the
    reference) is told that hint, e.g. which convention it followed instead of the asked one."""
    expected = np.asarray(expected)
    like = [(np.asarray(other, dtype=float), hint) for other, hint in like]

    def body(output):
        arr = as_array(output, expected.shape, what)
        if not np.all(np.isfinite(arr.astype(float))):
            raise Wrong(say("classroom.not_finite", what=what))
        if not np.allclose(arr.astype(float), expected.astype(float), rtol=rtol, atol=atol):
            for other, hint in like:
                if other.shape == arr.shape and np.allclose(arr.astype(float), other,
                                                            rtol=rtol, atol=atol):
                    raise Wrong(say("classroom.differs_like", what=what, hint=hint))
            largest = np.max(np.abs(arr.astype(float) - expected.astype(float)))
            raise Wrong(say("classroom.differs_by", what=what, largest=largest, rtol=rtol,
                            atol=atol))
    return checker(body)


def equal_to(expected, what: str = OUTPUT):
    expected = np.asarray(expected)

    def body(output):
        arr = as_array(output, expected.shape, what)
        if expected.dtype == bool and arr.dtype != bool:
            raise Wrong(say("classroom.dtype_not_bool", what=what, dtype=str(arr.dtype)))
        if not np.array_equal(arr, expected):
            raise Wrong(say("classroom.differs", what=what))
    return checker(body)


def shaped(shape, dtype=None, what: str = OUTPUT):
    def body(output):
        arr = as_array(output, shape, what)
        if dtype is not None and arr.dtype != dtype:
            raise Wrong(say("classroom.wrong_dtype", what=what, dtype=str(arr.dtype),
                            expected=str(np.dtype(dtype))))
    return checker(body)


def pair(first, second):
    """Both parts of a returned ``(output, weights)`` pair must pass their checks."""
    def check(output):
        if not isinstance(output, list) or len(output) != 2:
            return say("classroom.expected_pair")
        return first(output[0]) or second(output[1])
    return check


def all_of(*checks):
    def check(output):
        return next((why for why in (c(output) for c in checks) if why), None)
    return check


def number(expected: int, what: str = BYTES, like=()):
    """Right when exactly ``expected``; ``like``: (a typical wrong value, its hint) pairs, as
    in :func:`close_to`."""
    def body(output):
        if isinstance(output, (list, str)) or output is None:
            raise Wrong(say("classroom.expected_number"))
        value = np.asarray(output)
        if value.shape != () or value != expected:
            for other, hint in like:
                if value.shape == () and other != expected and value == other:
                    raise Wrong(say("classroom.differs_like", what=what, hint=hint))
            raise Wrong(say("classroom.differs", what=what))
    return checker(body)


def scalar(what: str = OUTPUT):
    def body(output):
        if isinstance(output, (list, str)) or output is None:
            raise Wrong(say("classroom.not_one_number", what=what))
        if np.asarray(output).shape != ():
            raise Wrong(say("classroom.shape_not_number", what=what,
                            got=np.asarray(output).shape))
    return checker(body)


def in_range(n_kv_heads: int):
    def body(output):
        if isinstance(output, (list, str, bool)) or output is None:
            raise Wrong(say("classroom.expected_integer"))
        value = np.asarray(output)
        if value.shape != () or not 0 <= value < n_kv_heads:
            raise Wrong(say("classroom.index_range", last=n_kv_heads - 1))
    return checker(body)

