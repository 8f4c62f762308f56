"""Sibling faces (CONTRIBUTING, "Changing one explorer"): no face of an explorer is built from
another. :func:`forbid` replaces a chapter module's face functions with one that fails the test
when called; a test then builds the other faces."""

from __future__ import annotations

import pytest


def forbid(monkeypatch, module, *names: str) -> None:
    """``module.<name>`` for each of ``names`` fails the test if anything calls it."""
    for name in names:
        getattr(module, name)   # a face that does not exist is a mistake in the test
        monkeypatch.setattr(module, name, _fails(f"{module.__name__}.{name}"))


def _fails(name: str):
    def call(*args, **kwargs):
        pytest.fail(f"{name} was called: a face is built from another face")
    return call
