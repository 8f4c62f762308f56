"""Every assignment, one module each: ``aNN_<stem>.py`` for ``assignments/NN_<stem>.ipynb``.

A module defines ``ASSIGNMENT``, a :class:`~book.classroom.cases.Assignment`: its hidden
cases, the constant and float32 answers that :mod:`book.classroom.fairness` scores against
them, and the demo's partly wrong solution. The registry is the explicit list below (nothing
finds a module by name or glob; ``tests/test_layers.py`` checks it), so adding an assignment
means its notebook under ``assignments/``, its catalogue ``locale/zh_CN/assignments/<stem>.po``,
its module here and one entry in :data:`MODULES` (``tests/classroom/test_classroom_units.py``
fails, naming it, where a module or a notebook is left out).

:data:`ASSIGNMENTS` maps each otter assignment name (the one stored in the student notebooks'
metadata) to its assignment, in the order of :data:`MODULES`.
"""

from __future__ import annotations

from ..cases import Assignment
from . import (
    a01_attention_numpy,
    a02_mha_torch,
    a03_kv_cache,
    a04_gqa,
    a05_scaling,
    a06_stability,
    a07_masks,
)

MODULES = (a01_attention_numpy, a02_mha_torch, a03_kv_cache, a04_gqa, a05_scaling,
           a06_stability, a07_masks)


def _registry(modules) -> dict[str, Assignment]:
    found: dict[str, Assignment] = {}
    for module in modules:
        assignment, short = module.ASSIGNMENT, module.__name__.rsplit(".", 1)[-1]
        if short != f"a{assignment.stem}":
            raise ValueError(f"{module.__name__} holds the assignment of "
                             f"{assignment.stem}.ipynb: name the module a{assignment.stem}.py")
        if assignment.name in found:
            raise ValueError(f"two assignments are named {assignment.name!r}")
        found[assignment.name] = assignment
    return found


ASSIGNMENTS: dict[str, Assignment] = _registry(MODULES)
