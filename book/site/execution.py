"""The build's notebook execution: in parallel, with progress, and cached by what a notebook runs.

MyST-NB (``execute_notebooks: force``) executes each notebook when Sphinx reads it, one after
the other, silently, and again whenever its source changes, prose included. This module takes
that step over (registered by ``book.site.sphinxext``) while keeping force mode's meaning:

* before Sphinx reads anything (``env-before-read-docs``), every notebook it is about to read
  that has no cached run is executed, several at once (one kernel per core: ``BOOK_JOBS``,
  default the number of cores; builds running side by side in one checkout share those
  slots), each line of progress naming the notebook and how many are left::

      [en 3/14] chapters/03_walkthrough.ipynb: Executing notebook
      [en 3/14] chapters/03_walkthrough.ipynb: executed in 7.9 s (2 running, 9 left)

* a run is cached under a key of what the execution depends on: the notebook's code cells
  (source and tags, after the student edition's stripping), its kernel, the edition's
  language, and the hash of its other inputs that ``book.site.sphinxext`` keeps for the
  never-stale rebuild (the ``book/`` modules it imports, the string table, the data files, the
  libraries' versions). A prose-only edit changes none of them: Sphinx re-reads the page and
  MyST-NB renders it from the cached outputs, without a kernel. Anything else that changes
  the key executes the notebook again, exactly as before;
* both editions run the same code cells, so what does not depend on the language — training
  runs, timings, the data set — is computed once: the kernels share a folder of results
  (``book.kit.memo``, under the salt of every input of the book's code; a kernel asking for a
  result another is computing waits for it). Each build takes the next notebook in the book's
  order that no other build is running at the moment (:func:`_claim`), so two editions do
  not compute one chapter at the same time: the second loads what the first computed;
* MyST-NB then reads each notebook as in force mode (same ``jupyter_execute/`` copies, glue
  files and ``ExecutionError`` on a failing cell); its client for force mode is replaced by
  :class:`CachedClient`, which fills the notebook's outputs from the cache (executing it there
  and then if the cache has nothing, e.g. a notebook some other hook changed).

* the kernels are forked from a process that has imported what every chapter's kernel
  imports (ipykernel, torch, the ``book`` package: ~2.7 s of each kernel's start), one fork
  server per build that executes at least two notebooks more than it runs at once
  (``book.site.kernel_fork``); a kernel that cannot be forked starts as before. Nothing of a
  notebook runs before its own first cell.

Each execution is the one MyST-NB's force mode makes (``jupyter_cache``'s
``single_nb_execution``, restated in :func:`_worker`: the notebook's folder as working
directory, the configured timeout and ``allow_errors``), in a worker process
(``python -P book/site/execution.py run``) whose kernel inherits the build's environment
(``BOOK_BUILD``, ``BOOK_LANG``, and the shared results' folder and salt).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CACHE_ENV = "BOOK_EXECUTION_CACHE"   # a folder shared by several builds (default: per build)
JOBS_ENV = "BOOK_JOBS"               # kernels at once (default: the number of cores)
CACHE_FOLDER = ".book-executed"      # beside the build's .doctrees
SLOTS_FOLDER = Path("_build") / ".execution-slots"   # in the checkout (the source folder)
MEMO_FOLDER = Path("_build") / ".book-memo"          # results both editions share (book.kit.memo)

_lock = threading.Lock()
_state: dict = {}   # the running build: app, env, cache folder, edition, failures


def jobs() -> int:
    value = os.environ.get(JOBS_ENV, "")
    if not value:
        return max(1, os.cpu_count() or 1)
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{JOBS_ENV} must be a whole number of kernels ≥ 1, not {value!r}")
    return int(value)


# ---- the key ----------------------------------------------------------------------------------

def execution_key(notebook: dict, inputs: str, language: str) -> str:
    """What a run depends on, hashed: the code cells (source and tags, in order), the kernel,
    the notebook's own execution settings, ``inputs`` (the never-stale hash of the book/
    modules, strings, data and libraries) and the edition's ``language``. Not the prose."""
    if not isinstance(notebook, dict) or "cells" not in notebook:
        raise TypeError("execution_key needs a notebook (a dict with 'cells'), "
                        f"not {type(notebook).__name__}")
    cells = []
    for cell in notebook["cells"]:
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        cells.append([source, sorted(cell.get("metadata", {}).get("tags", []))])
    metadata = notebook.get("metadata", {})
    payload = {"cells": cells, "kernel": metadata.get("kernelspec", {}).get("name"),
               "execution": metadata.get("execution"), "inputs": inputs,
               "language": language, "python": sys.version}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:32]


def merge_outputs(notebook, executed) -> None:
    """Put ``executed``'s outputs (and the metadata a run adds: widget state, language info)
    into ``notebook``, whose code cells are the same (same key), in place."""
    code = [c for c in notebook["cells"] if c.get("cell_type") == "code"]
    done = [c for c in executed["cells"] if c.get("cell_type") == "code"]
    if len(code) != len(done):
        raise ValueError(f"the cached run has {len(done)} code cells, the notebook {len(code)}"
                         ": the cache entry does not belong to this notebook")
    for cell, ran in zip(code, done, strict=True):
        cell["outputs"] = ran.get("outputs", [])
        cell["execution_count"] = ran.get("execution_count")
    for key, value in executed.get("metadata", {}).items():
        if key not in notebook["metadata"] or key in ("widgets", "language_info"):
            notebook["metadata"][key] = value


# ---- running one notebook ------------------------------------------------------------------

def worker_command(source: Path, target: Path, cwd: Path, timeout: int | None,
                   allow_errors: bool) -> list[str]:
    """The worker's command line: this file as a script (``-P``: its folder kept off
    ``sys.path``), not ``-m book.site.execution``, which would import the ``book`` package,
    torch included: ~1.5 s of each of a build's 28 workers."""
    return [sys.executable, "-P", str(Path(__file__).resolve()), "run", str(source),
            str(target), str(cwd), str(timeout if timeout else 0), "1" if allow_errors else "0"]


def run_one(source: Path, target: Path, cwd: Path, timeout: int | None,
            allow_errors: bool, env: dict[str, str] | None = None) -> tuple[float, str | None]:
    """Execute the notebook ``source`` as MyST-NB's force mode does, in a worker process
    (``env``: extra environment for it and its kernel); write it to ``target`` when it ran
    clean. Returns (seconds, traceback or None)."""
    start = time.perf_counter()
    env = {**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1", **(env or {})}
    proc = subprocess.run(worker_command(source, target, cwd, timeout, allow_errors),
                          capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    error = source.with_suffix(".err")   # the worker writes the cell's traceback there
    if proc.returncode != 0 or not target.is_file():
        text = error.read_text(encoding="utf-8") if error.is_file() else ""
        error.unlink(missing_ok=True)
        return seconds, (text or proc.stderr or proc.stdout
                         or f"exit status {proc.returncode}")[-20000:]
    return seconds, None


def _worker(source: str, target: str, cwd: str, timeout: str, allow_errors: str) -> int:
    import traceback

    import nbformat
    from nbclient import execute
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    notebook = nbformat.read(source, as_version=4)
    # jupyter_cache's single_nb_execution (force mode's), without importing jupyter_cache (its
    # database layer, sqlalchemy, took ~0.6 s of each of the build's 28 worker starts): the
    # notebook's own execution settings override the build's, then nbclient runs it.
    timeout, allow = int(timeout) or None, allow_errors == "1"
    settings = notebook.metadata.get("execution", {})
    timeout = settings.get("timeout", timeout)
    allow = settings.get("allow_errors", allow)
    options = {}
    if os.environ.get("BOOK_KERNEL_FORK"):   # the build's fork server (kernel_fork.py)
        import importlib.util

        spec = importlib.util.spec_from_file_location(
            "book_kernel_fork", Path(__file__).with_name("kernel_fork.py"))
        kernel_fork = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(kernel_fork)
        options["kernel_manager_class"] = kernel_fork.kernel_manager_class(
            os.environ["BOOK_KERNEL_FORK"])
    try:
        execute(notebook, cwd=cwd, timeout=timeout, allow_errors=allow, record_timing=False,
                **options)
    except (CellExecutionError, CellTimeoutError):   # the cell's traceback only
        Path(source).with_suffix(".err").write_text(traceback.format_exc(), encoding="utf-8")
        return 1
    tmp = Path(f"{target}.{os.getpid()}.tmp")   # builds sharing a cache never write one file
    nbformat.write(notebook, str(tmp))
    tmp.replace(target)  # appears whole or not at all
    return 0


@contextlib.contextmanager
def _slot(folder: Path, n: int):
    """One of ``n`` kernel slots shared by every build of this checkout (file locks)."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): each build keeps to its own pool
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    while True:
        for i in range(n):
            handle = open(folder / f"{i}.lock", "w")  # noqa: SIM115 - held while the kernel runs
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.close()
                continue
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
                handle.close()
            return
        time.sleep(0.2)


@contextlib.contextmanager
def _claim(todo: list, folder: Path):
    """Take from ``todo`` (``(docname, ...)`` items, in the book's order) the first notebook
    that no other build of this checkout is executing now (a file lock per notebook, held
    while it runs), or the first one when all are; None when ``todo`` is empty. Two editions
    then never run one chapter at the same time: the second finds the shared results of the
    first (book.kit.memo) instead of waiting for them."""
    try:
        import fcntl
    except ImportError:   # no flock (Windows): the book's order
        fcntl = None
    handle = None
    with _lock:
        if not todo:
            item = None
        else:
            index = 0
            if fcntl is not None:
                folder.mkdir(parents=True, exist_ok=True)
                for i, candidate in enumerate(todo):
                    name = candidate[0].replace("/", "__")
                    attempt = open(folder / f"notebook-{name}.lock", "w")  # noqa: SIM115
                    try:
                        fcntl.flock(attempt, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except OSError:
                        attempt.close()
                        continue
                    index, handle = i, attempt
                    break
            item = todo.pop(index)
    try:
        yield item
    finally:
        if handle is not None:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()


# ---- the Sphinx side -------------------------------------------------------------------------

def _log(message: str) -> None:
    with _lock:
        print(message, flush=True)


def _edition(app) -> str:
    from book.site.editions import edition_of

    return edition_of(app.config.language)


def _prefix(app) -> str:
    from book.site import student

    return _edition(app) + (" student" if student.enabled() else "")


def _memo_dir(app) -> Path:
    folder = os.environ.get(CACHE_ENV)
    return Path(folder) / "memo" if folder else Path(app.srcdir) / MEMO_FOLDER


def _cache_dir(app) -> Path:
    folder = os.environ.get(CACHE_ENV)
    path = Path(folder) if folder else Path(app.doctreedir).parent / CACHE_FOLDER
    path.mkdir(parents=True, exist_ok=True)
    return path


def _as_read(app, docname: str) -> dict:
    """The notebook as MyST-NB will be handed it (the student edition strips solutions in
    ``source-read``; book/site/student.py)."""
    from book.site import student

    text = Path(app.env.doc2path(docname)).read_text(encoding="utf-8")
    if student.enabled():
        text, _ = student.strip_notebook(text, _edition(app))
    return json.loads(text)


def as_run(notebook: dict, page: str, edition: str) -> dict:
    """``notebook`` as its kernel runs it. In the Chinese edition, each code cell's printed
    text (a string or f-string passed to ``print``) is translated by the page's code catalogue
    (``locale/zh_CN/code/<page>.po``, book.kit.codetext.translate_printed), so the lesson's
    plain ``print(f"...")`` prints Chinese, as the Chinese page shows the cell
    (book.site.editions.translate_code_comments) and as the Chinese notebook runs it."""
    if edition != "zh":
        return notebook
    from book.kit import codetext
    from book.site import zh_notebooks

    catalogue = zh_notebooks.load_catalogue(zh_notebooks.CODE_DIR / f"{page}.po")
    if not catalogue:
        return notebook
    ran = json.loads(json.dumps(notebook))
    for cell in ran["cells"]:
        if cell.get("cell_type") == "code":
            source = cell.get("source", "")
            source = "".join(source) if isinstance(source, list) else source
            cell["source"] = codetext.translate_printed(source, catalogue)
    return ran


def _key(app, docname: str, notebook: dict) -> str:
    inputs = getattr(app.env, "book_notebook_inputs", {}).get(docname, "")
    return execution_key(as_run(notebook, Path(docname).name, _edition(app)), inputs,
                         _edition(app))


def _salt(app) -> str:
    """The shared results' salt: every notebook's inputs (book.site.sphinxext's hashes of the
    book/ modules each imports, the strings, the data, the libraries), so that an edit to any
    code a notebook runs never serves a result computed by the old code. The same in both
    editions (it leaves out the language and the prose)."""
    inputs = sorted(set(getattr(app.env, "book_notebook_inputs", {}).values()))
    return hashlib.sha256("\n".join(inputs).encode()).hexdigest()


def _active(app) -> bool:
    return app.config.nb_execution_mode == "force" and not app.config.nb_execution_in_temp


def builder_inited(app) -> None:
    _state.clear()
    if not _active(app):
        return
    _state.update(app=app, cache=_cache_dir(app), failures={}, keys={}, memo=_memo_dir(app))


def pre_execute(app, env, docnames) -> None:
    """``env-before-read-docs``: run the notebooks about to be read that have no cached run."""
    if not _state:
        return
    todo = []
    for docname in sorted(docnames):
        path = Path(env.doc2path(docname))
        if path.suffix != ".ipynb":
            continue
        notebook = _as_read(app, docname)
        key = _key(app, docname, notebook)
        if not (_state["cache"] / f"{key}.ipynb").is_file():
            todo.append((docname, path, notebook, key))
    if not todo:
        return
    n, total = jobs(), len(todo)
    prefix = _prefix(app)
    _log(f"[{prefix}] executing {total} notebook(s), {min(n, total)} at once "
         f"({JOBS_ENV}={n})")
    counter = {"started": 0, "done": 0}
    slots = Path(app.srcdir) / SLOTS_FOLDER
    timeout = app.config.nb_execution_timeout
    allow = app.config.nb_execution_allow_errors

    def one():
        with _slot(slots, n):
            with _claim(todo, slots) as item:
                if item is None:
                    return False
                docname, path, notebook, key = item
                rel = Path(path).relative_to(app.srcdir).as_posix()
                with _lock:
                    counter["started"] += 1
                    i = counter["started"]
                _log(f"[{prefix} {i}/{total}] {rel}: Executing notebook")
                seconds, error = _execute(path, notebook, key, timeout, allow)
        with _lock:
            counter["done"] += 1
            running = counter["started"] - counter["done"]
            left = total - counter["started"]
        if error is None:
            _log(f"[{prefix} {i}/{total}] {rel}: executed in {seconds:.1f} s "
                 f"({running} running, {left} left)")
        else:
            _state["failures"][key] = error
            _log(f"[{prefix} {i}/{total}] {rel}: FAILED after {seconds:.1f} s "
                 "(the traceback follows when Sphinx reads it)")
        return True

    def worker():
        while one():
            pass

    start = time.perf_counter()
    from book.site import kernel_fork

    # The first kernels start before the server has done its imports (~5 s of one core), so
    # they start as usual; each later one is forked, ~2.7 s sooner. The server pays for itself
    # from its second fork: a build executing fewer notebooks (one chapter edited) has none.
    server = kernel_fork.start() if total >= min(n, total) + 2 else None
    _state["fork"] = {kernel_fork.SOCKET_ENV: server.path} if server else {}
    try:
        with ThreadPoolExecutor(max_workers=min(n, total)) as pool:
            for future in [pool.submit(worker) for _ in range(min(n, total))]:
                future.result()
    finally:
        _state["fork"] = {}
        if server:
            server.close()
    _log(f"[{prefix}] {total} notebook(s) executed in {time.perf_counter() - start:.1f} s")


def _execute(path: Path, notebook: dict, key: str, timeout,
             allow_errors) -> tuple[float, str | None]:
    cache = _state["cache"]
    notebook = as_run(notebook, Path(path).stem, _edition(_state["app"]))
    with tempfile.TemporaryDirectory(prefix="book-exec-") as tmp:
        source = Path(tmp) / Path(path).name
        source.write_text(json.dumps(notebook), encoding="utf-8")
        from book.kit import memo

        env = {memo.FOLDER_ENV: str(_state["memo"]), memo.SALT_ENV: _salt(_state["app"]),
               **_state.get("fork", {})}
        return run_one(source, cache / f"{key}.ipynb", Path(path).parent, timeout, allow_errors,
                       env)


def prune(app, exception) -> None:
    """``build-finished``: drop the cached runs that no page of this build uses any more."""
    if exception is not None or not _state or os.environ.get(CACHE_ENV):
        return  # a shared cache serves other builds too
    used = {f"{key}.ipynb" for key in getattr(app.env, "book_execution_keys", {}).values()}
    for path in _state["cache"].glob("*.ipynb"):
        if path.name not in used:
            path.unlink(missing_ok=True)
    from book.kit import memo

    salt = _salt(app)[:16]
    for path in _state["memo"].glob("*.*"):   # results of code that is no longer there
        if memo.file_salt(path) != salt:
            path.unlink(missing_ok=True)


def _client_class():
    from myst_nb.core.execute.base import ExecutionError, NotebookClientBase

    class CachedClient(NotebookClientBase):
        """Force mode's client, from the cache: the outputs of the run with this key."""

        def start_client(self):
            app = _state["app"]
            env = app.env
            docname = env.docname
            key = _key(app, docname, self.notebook)
            target = _state["cache"] / f"{key}.ipynb"
            error = _state["failures"].get(key)
            seconds = 0.0
            if error is None and not target.is_file():   # not pre-executed: run it now
                rel = Path(self.path).relative_to(app.srcdir).as_posix()
                _log(f"[{_prefix(app)}] {rel}: Executing notebook")
                seconds, error = _execute(self.path, self.notebook, key,
                                          self.nb_config.execution_timeout,
                                          self.nb_config.execution_allow_errors)
            if error is not None:
                self.exec_metadata = {"mtime": time.time(), "runtime": seconds,
                                      "method": "force", "succeeded": False,
                                      "error": "CellExecutionError", "traceback": error}
                if self.nb_config.execution_raise_on_error:
                    raise ExecutionError(str(self.path)) from RuntimeError(error)
                self.logger.warning(f"Executing notebook failed:\n{error}", subtype="exec")
                return
            import nbformat

            merge_outputs(self.notebook, nbformat.read(str(target), as_version=4))
            keys = getattr(env, "book_execution_keys", {})
            keys[docname] = key
            env.book_execution_keys = keys   # pickled with the environment
            self.exec_metadata = {"mtime": target.stat().st_mtime, "runtime": seconds,
                                  "method": "force", "succeeded": True, "error": None,
                                  "traceback": None}

    return CachedClient


def install(app) -> None:
    """Replace MyST-NB's force-mode client by :class:`CachedClient` (``book.site.sphinxext``)."""
    import myst_nb.sphinx_ as myst_sphinx

    original = getattr(myst_sphinx, "create_client", None)
    if original is None:
        raise RuntimeError("myst_nb.sphinx_ has no create_client (a MyST-NB version this "
                           "book does not know): see book/site/execution.py")
    if getattr(original, "book_cached", False):
        original = original.book_original
    client = _client_class()

    def create_client(notebook, source, nb_config, logger, read_fmt=None):
        path = Path(source)
        if _state and nb_config.execution_mode == "force" and path.suffix == ".ipynb" \
                and path.is_file():
            return client(notebook, path, nb_config, logger)
        return original(notebook, source, nb_config, logger, read_fmt)

    create_client.book_cached = True
    create_client.book_original = original
    myst_sphinx.create_client = create_client
    app.connect("builder-inited", builder_inited)
    app.connect("env-before-read-docs", pre_execute)
    app.connect("build-finished", prune)


if __name__ == "__main__":
    if len(sys.argv) != 7 or sys.argv[1] != "run":
        sys.exit("usage: python -P book/site/execution.py run SOURCE.ipynb TARGET.ipynb CWD "
                 "TIMEOUT ALLOW_ERRORS(0|1)")
    sys.exit(_worker(*sys.argv[2:]))
