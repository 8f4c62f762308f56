"""Results computed once per book build, for both editions: ``@shared``.

The two editions of the book run the same code cells; only the words differ. A chapter's
expensive steps — training runs, timings, the data set — give the same result in both, so the
build computes each of them once: in a kernel of the build, ``book.site.execution`` sets
:data:`FOLDER_ENV` (a folder shared by the builds of one checkout) and :data:`SALT_ENV` (the
hash of every notebook's inputs: the ``book/`` modules they import, the string table, the data
files, the libraries' versions — the never-stale rebuild's inputs). A function decorated
with :func:`shared` then keeps its result there under a key of its name, its arguments (by
value: tensors, models' weights and settings, orders, numbers), the global random states it
starts from and torch's thread count; a later call with the same key, in the other edition's
kernel or another chapter, loads the result instead of computing it, and leaves the random
states where the computation left them. Outside a build (Jupyter, the tests) ``shared`` does
nothing at all.

An argument the key cannot describe by value (a callable, a random generator, an unknown
object) makes the call compute as usual. Only functions whose result does not depend on the
edition's language are decorated.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import inspect
import os
import pickle
import random
from pathlib import Path

import numpy as np
import torch
from torch import nn

FOLDER_ENV = "BOOK_MEMO"        # set by book.site.execution in the build's kernels
SALT_ENV = "BOOK_MEMO_SALT"     # the hash of the build's inputs (book/ code, strings, data)


class _Unkeyable(Exception):
    """An argument :func:`fingerprint` cannot describe by value."""


_ATOMS = (str, int, float, bool, type(None), np.str_, np.int64, np.float64)


def _plain(value) -> bool:
    """An atom, or a tuple of atoms: its repr says all of it, the same in every process."""
    kind = type(value)
    return kind in _ATOMS or (kind is tuple and all(type(v) in _ATOMS for v in value))


def _update(h, value) -> None:   # noqa: C901 - one case per kind of value
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        h.update(f"{type(value).__name__}:{value!r};".encode())
    elif isinstance(value, (tuple, list)):
        h.update(f"{type(value).__name__}[{len(value)}](".encode())
        for item in value:
            _update(h, item)
        h.update(b")")
    elif isinstance(value, dict):
        h.update(f"dict[{len(value)}](".encode())
        for key, item in value.items():
            _update(h, key)
            _update(h, item)
        h.update(b")")
    elif isinstance(value, (set, frozenset)):
        parts = sorted(fingerprint(item) for item in value)
        h.update(f"set{parts};".encode())
    elif isinstance(value, torch.Tensor):
        t = value.detach().cpu().contiguous()
        h.update(f"tensor:{t.dtype}:{tuple(t.shape)}:{value.requires_grad}:".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    elif isinstance(value, np.ndarray):
        if value.dtype == object:
            raise _Unkeyable("an object array")
        h.update(f"ndarray:{value.dtype}:{value.shape}:".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, np.generic):
        h.update(f"np:{value.dtype}:{value!r};".encode())
    elif isinstance(value, (torch.dtype, torch.device)):
        h.update(f"{type(value).__name__}:{value};".encode())
    elif isinstance(value, nn.Module):
        _update_module(h, value)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        kind = f"{type(value).__module__}.{type(value).__qualname__}"
        fields = [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
        if all(_plain(v) for _, v in fields):   # e.g. an Order: its repr, 4× faster
            h.update(f"dcr:{kind}{fields!r};".encode())
            return
        h.update(f"dc:{kind}(".encode())
        for name, field in fields:
            h.update(name.encode())
            _update(h, field)
        h.update(b")")
    else:
        raise _Unkeyable(type(value).__name__)


def _update_module(h, module: nn.Module) -> None:
    """A module by value: its class, every attribute (settings, flags), its parameters and
    buffers, its submodules. A hook makes it unkeyable (it may change what the module does)."""
    h.update(f"module:{type(module).__module__}.{type(module).__qualname__}(".encode())
    for name, value in sorted(vars(module).items()):
        if "hook" in name:
            if value:   # an empty hook table (or False) changes nothing
                raise _Unkeyable(f"a module with {name}")
            continue
        h.update(name.encode())
        _update(h, dict(value) if name in ("_parameters", "_buffers", "_modules") else value)
    h.update(b")")


def fingerprint(*values) -> str:
    """The hash of ``values`` by value (raises :class:`_Unkeyable` for what it cannot describe)."""
    h = hashlib.sha256()
    for value in values:
        _update(h, value)
    return h.hexdigest()


def _rng_states():
    return torch.get_rng_state(), np.random.get_state(), random.getstate()


def _set_rng_states(states) -> None:
    torch.set_rng_state(states[0])
    np.random.set_state(states[1])
    random.setstate(states[2])


def _folder() -> tuple[Path, str] | None:
    folder, salt = os.environ.get(FOLDER_ENV, ""), os.environ.get(SALT_ENV, "")
    if not folder or not salt:
        return None
    return Path(folder), salt


def _load(path: Path):
    if not path.is_file():
        return None
    try:
        with path.open("rb") as handle:
            return pickle.load(handle)
    except Exception:   # a file cut short (a killed build): compute it again
        return None


@contextlib.contextmanager
def _key_lock(path: Path):
    """Held while one kernel computes ``path``'s result, so that a kernel of the other edition
    asking for the same waits and loads it (the editions then show the same measurements)."""
    try:
        import fcntl
    except ImportError:   # no flock (Windows): both may compute; the last write stays
        yield
        return
    with path.with_suffix(".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def file_salt(path: Path) -> str:
    """The salt a memo file was written under (its name's first part): book.site.execution
    prunes the files of other salts."""
    return Path(path).name.split("-", 1)[0]


def shared(fn=None, *, rng: bool = True, mutates: str | None = None):
    """Decorator: in a book build, ``fn``'s result is computed once and loaded by every later
    call with the same arguments (both editions, every chapter); elsewhere, a plain call.

    ``rng=False`` for a function that leaves the global random states alone (seeds its own
    generators, or ``torch.random.fork_rng``): its key then leaves them out, so chapters that
    reach it from different random states share it. ``mutates`` names a torch-module argument
    the function changes in place (``fit`` trains its ``model``): its weights and train/eval
    flags are stored with the result and put back into the caller's module on a load.
    """
    if fn is None:
        return functools.partial(shared, rng=rng, mutates=mutates)
    signature = inspect.signature(fn)
    if mutates is not None and mutates not in signature.parameters:
        raise ValueError(f"{fn.__qualname__} has no argument {mutates!r} to mutate")
    name = f"{fn.__module__}.{fn.__qualname__}"

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        where = _folder()
        if where is None:
            return fn(*args, **kwargs)
        folder, salt = where
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return fn(*args, **kwargs)   # let the function say what is wrong
        bound.apply_defaults()
        arguments = {k: v for k, v in bound.arguments.items() if k != "progress"}
        try:
            key = fingerprint(name, salt, arguments, torch.get_num_threads(),
                              [np.asarray(s) if isinstance(s, torch.Tensor) else s
                               for s in _rng_states()] if rng else None)
        except _Unkeyable:
            return fn(*args, **kwargs)
        path = folder / f"{salt[:16]}-{fn.__name__}-{key[:24]}.pkl"
        target = bound.arguments.get(mutates) if mutates else None
        folder.mkdir(parents=True, exist_ok=True)
        with _key_lock(path):   # the other edition computing the same: wait, then load it
            stored = _load(path)
            if stored is not None:
                if rng:
                    _set_rng_states(stored["rng"])
                if target is not None:
                    target.load_state_dict(stored["state"])
                    for module, flag in zip(target.modules(), stored["training"], strict=True):
                        module.training = flag
                return stored["result"]
            result = fn(*args, **kwargs)
            stored = {"result": result, "rng": _rng_states() if rng else None}
            if target is not None:
                stored["state"] = target.state_dict()
                stored["training"] = [m.training for m in target.modules()]
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            try:
                with tmp.open("wb") as handle:
                    pickle.dump(stored, handle, protocol=pickle.HIGHEST_PROTOCOL)
                tmp.replace(path)   # whole or not at all
            except (pickle.PicklingError, TypeError, AttributeError):
                tmp.unlink(missing_ok=True)   # a result pickle cannot keep: computed each time
            return result

    wrapper.book_shared = True
    return wrapper
