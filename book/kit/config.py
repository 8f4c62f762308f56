"""Typed settings: frozen dataclasses that also read like the dicts they replace.

A :class:`Config` subclass declares its fields with types and defaults; an instance is
immutable, prints with its field names, and can still be unpacked as keyword arguments
(``TinyEncoder(**train.MODEL)``), indexed (``SETTINGS["steps"]``) or turned into a plain dict
(``dict(cfg)``, ``cfg.as_dict()``) — what a checkpoint stores.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping


class Config(Mapping):
    """Base of the book's settings dataclasses: subclass it with
    ``@dataclass(frozen=True, eq=False)`` (``eq=False`` keeps :class:`Mapping`'s equality, so a
    config equals the dict of the same settings, e.g. one read back from a checkpoint)."""

    __hash__ = None   # a Mapping compares by value

    def __getitem__(self, key: str):
        if not isinstance(key, str) or key not in self._names():
            raise KeyError(f"{type(self).__name__} has no setting {key!r}; its settings are "
                           f"{list(self._names())}")
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def _names(self) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(self))

    def as_dict(self) -> dict:
        """The settings as a plain dict (for a checkpoint's metadata or a table)."""
        return {name: getattr(self, name) for name in self._names()}

    def replace(self, **changes) -> Config:
        """A copy with some settings changed; an unknown name raises ``TypeError``."""
        unknown = set(changes) - set(self._names())
        if unknown:
            raise TypeError(f"{type(self).__name__} has no setting(s) {sorted(unknown)}; its "
                            f"settings are {list(self._names())}")
        return dataclasses.replace(self, **changes)
