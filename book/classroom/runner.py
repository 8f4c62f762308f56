"""What runs inside a submission's sandbox: execute the notebook, then call its functions.

This file is copied into the sandbox and run there as a script (``python -I runner.py``); it
imports nothing from ``book`` (which is not importable inside). It executes the student's
notebook in a fresh ``python3`` kernel with nbclient, then runs one more cell in that same
kernel: :data:`KERNEL_HARNESS`, which calls the graded functions on the cases' inputs and
writes their outputs as JSON. The runner sends back, on the file descriptor it was given, one
JSON document: how the run went and those outputs. Nothing in it is trusted: the teacher's
process decodes it strictly (:func:`decode`) and compares it with the reference itself.

The value codec (:func:`encode`, :func:`decode`) is shared by both sides: plain JSON, arrays
as ``{"array": {"dtype", "shape", "data"}}``, never pickle.
"""

from __future__ import annotations

import json
import os
import sys

ALLOWED_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                  "uint64", "float16", "float32", "float64")
MAX_ELEMENTS = 200_000  # per array; the graded outputs are a few hundred numbers
MAX_DEPTH = 4

# Executed in the student's kernel after the notebook. It defines the codec again (the kernel
# does not share the runner's modules) and calls each case's function. A student's code can
# tamper with everything here: the result is then wrong data, never a score.
KERNEL_HARNESS = r'''
def __grading_harness(cases_path, results_path):
    import json as _json
    import signal as _signal

    import numpy as _np

    def _to_array(value):
        if hasattr(value, "detach") and hasattr(value, "numpy"):
            value = value.detach().cpu().numpy()
        return _np.asarray(value)

    def _encode(value, depth=0):
        if depth > 4:
            raise ValueError("nested too deeply")
        if value is None or isinstance(value, (bool, int, float, str)):
            return value if not isinstance(value, str) else {"str": value[:200]}
        if isinstance(value, (tuple, list)):
            return {"list": [_encode(v, depth + 1) for v in value[:16]]}
        arr = _to_array(value)
        if arr.dtype == object:
            raise TypeError(f"returned {type(value).__name__}, not numbers")
        return {"array": {"dtype": str(arr.dtype), "shape": list(arr.shape),
                          "data": arr.ravel().tolist()}}

    def _decode(obj):
        if isinstance(obj, dict) and "array" in obj:
            a = obj["array"]
            arr = _np.array(a["data"], dtype=a["dtype"]).reshape(a["shape"])
            if obj.get("tensor"):
                import torch as _torch
                return _torch.from_numpy(arr)
            return arr
        if isinstance(obj, dict) and "list" in obj:
            return [_decode(v) for v in obj["list"]]
        return obj

    def _alarm(signum, frame):
        raise TimeoutError("the graded function ran past its time limit")

    with open(cases_path, encoding="utf-8") as f:
        cases = _json.load(f)
    namespace = globals()
    results = []
    for case in cases:
        try:
            _signal.signal(_signal.SIGALRM, _alarm)
            _signal.setitimer(_signal.ITIMER_REAL, case["seconds"])
            try:
                if case["function"] not in namespace:
                    raise NameError(f"{case['function']} is not defined")
                target = namespace[case["function"]]
                args = [_decode(a) for a in case["args"]]
                if case["recipe"] == "module":
                    import torch as _torch
                    layer = target(*[_decode(a) for a in case["init"]]).double()
                    state = {k: _decode(v) for k, v in case["state"].items()}
                    layer.load_state_dict(state)
                    with _torch.no_grad():
                        value = layer(*args)
                else:
                    value = target(*args)
                encoded = _encode(value)
            finally:
                _signal.setitimer(_signal.ITIMER_REAL, 0)
            results.append({"id": case["id"], "ok": True, "value": encoded})
        except BaseException as error:  # SystemExit and KeyboardInterrupt too: keep going
            results.append({"id": case["id"], "ok": False,
                            "error": f"{type(error).__name__}: {error}"[:300]})
    with open(results_path, "w", encoding="utf-8") as f:
        _json.dump(results, f)
    print("harness finished")
'''


# During grading ``import otter`` gets this stand-in: the public checks are scored by the
# teacher's process like the hidden ones, so otter's own checks would only cost time (about
# 1.5 s to import) and print results nobody reads. Students' own runs use the real otter.
OTTER_STUB = '''"""Stand-in for otter while a notebook is graded (see book/classroom/runner.py)."""


class Notebook:
    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        return lambda *args, **kwargs: None
'''


def _install_otter_stub() -> None:
    """Put the otter stand-in first on the kernel's path (the kernel inherits PYTHONPATH)."""
    import tempfile

    folder = tempfile.mkdtemp(prefix="grading-stubs-")
    os.mkdir(os.path.join(folder, "otter"))
    with open(os.path.join(folder, "otter", "__init__.py"), "w", encoding="utf-8") as f:
        f.write(OTTER_STUB)
    os.environ["PYTHONPATH"] = folder


def encode(value, *, tensor: bool = False):
    """Plain-JSON form of a case input (numpy array, int, float, bool, None or a list)."""
    import numpy as np

    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return {"list": [encode(v, tensor=tensor) for v in value]}
    arr = np.asarray(value)
    out = {"array": {"dtype": str(arr.dtype), "shape": list(arr.shape),
                     "data": arr.ravel().tolist()}}
    if tensor:
        out["tensor"] = True
    return out


class BadData(ValueError):
    """What came back from a sandbox is not well-formed data."""


def decode(obj, depth: int = 0):
    """Strictly decode an untrusted value sent back from a sandbox (see :func:`encode`).

    Accepts only None, bool/int/float, ``{"str"}``, ``{"list"}`` of at most 16 values and
    ``{"array"}`` of an allowed dtype whose data matches its shape; raises :class:`BadData`.
    """
    import numpy as np

    if depth > MAX_DEPTH:
        raise BadData("nested too deeply")
    if obj is None or isinstance(obj, (bool, int, float)):
        return obj
    if not isinstance(obj, dict) or len(obj) != 1:
        raise BadData(f"unexpected value {str(obj)[:60]!r}")
    (kind, body), = obj.items()
    if kind == "str" and isinstance(body, str):
        return body[:200]
    if kind == "list" and isinstance(body, list) and len(body) <= 16:
        return [decode(v, depth + 1) for v in body]
    if kind == "array" and isinstance(body, dict) and set(body) == {"dtype", "shape", "data"}:
        dtype, shape, data = body["dtype"], body["shape"], body["data"]
        if dtype not in ALLOWED_DTYPES:
            raise BadData(f"arrays of dtype {str(dtype)[:30]!r} are not graded")
        if (not isinstance(shape, list) or len(shape) > 6
                or not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n
                           for n in shape)):
            raise BadData("an array shape must be a list of at most 6 sizes")
        size = 1
        for n in shape:
            size *= n
        if size > MAX_ELEMENTS or not isinstance(data, list) or len(data) != size:
            raise BadData(f"array data does not match its shape {shape}")
        if not all(isinstance(x, (bool, int, float)) for x in data):
            raise BadData("array data must be numbers")
        try:
            return np.array(data, dtype=dtype).reshape(shape)
        except (ValueError, OverflowError) as error:
            raise BadData(f"array data is not {dtype}: {error}") from None
    raise BadData(f"unexpected value of kind {str(kind)[:30]!r}")


def _printed(cells, cap: int = 8000) -> str:
    """What the notebook's cells printed (stdout and errors), at most ``cap`` characters."""
    parts = []
    for cell in cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stdout":
                parts.append(str(out.get("text", "")))
            elif out.get("output_type") == "error":
                parts.append(f"{out.get('ename')}: {out.get('evalue')}\n")
    return "".join(parts)[-cap:]


def _first_error(nb) -> str:
    for index, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                return f"cell {index}: {out.get('ename')}: {str(out.get('evalue'))[:120]}"
    return ""


def run(notebook: str, cases: str, cell_timeout: float, harness_seconds: float) -> dict:
    """Execute ``notebook`` then the harness in one python3 kernel; report how it went."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    workdir = os.path.dirname(os.path.abspath(notebook))
    results_path = os.path.join(workdir, ".results.json")
    nb = nbformat.read(notebook, as_version=4)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    n_cells = len(nb.cells)
    harness = nbformat.v4.new_code_cell(
        KERNEL_HARNESS + f"\n__grading_harness({cases!r}, {results_path!r})\n")
    harness.metadata["grading_harness"] = True
    nb.cells.append(harness)
    current = {"index": 0}

    def on_cell_start(cell, cell_index):
        current["index"] = cell_index

    def timeout_of(cell):  # the harness calls every case, each within case_seconds
        return harness_seconds if cell.metadata.get("grading_harness") else cell_timeout

    client = NotebookClient(nb, kernel_name="python3", timeout_func=timeout_of,
                            allow_errors=True, interrupt_on_timeout=False,
                            record_timing=False, on_cell_start=on_cell_start,
                            resources={"metadata": {"path": workdir}})
    report = {"status": "ok", "detail": "", "results": None}
    try:
        client.execute()
    except CellTimeoutError:
        index = current["index"]
        where = ("the graded functions" if index == n_cells else f"cell {index}")
        limit = harness_seconds if index == n_cells else cell_timeout
        report.update(status="timeout", detail=f"{where} ran past {limit:g} s")
        return report
    except DeadKernelError:
        index = current["index"]
        where = "the graded functions" if index == n_cells else f"cell {index}"
        report.update(status="crash", detail=f"the kernel died in {where} (the notebook "
                                             "exited, killed its kernel or ran out of memory)")
        return report
    except Exception as error:  # noqa: BLE001 - any failure becomes a reason, never a crash
        report.update(status="crash", detail=f"{type(error).__name__}: {str(error)[:200]}")
        return report
    report["detail"] = _first_error(nbformat.from_dict({"cells": nb.cells[:n_cells]}))
    report["outputs"] = _printed(nb.cells[:n_cells])
    try:
        fd = os.open(results_path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, encoding="utf-8") as f:
            report["results"] = json.loads(f.read(8_000_000))
    except (OSError, ValueError) as error:
        report.update(status="crash", detail=f"no outputs from the graded functions ({error})")
    return report


def limit_resources(limits: dict) -> None:
    """Cap this process and its children (the kernel): memory, CPU, file size, core dumps."""
    try:
        import resource
    except ImportError:  # Windows: no POSIX limits (the guide says to grade inside WSL2)
        return
    caps = {resource.RLIMIT_AS: limits["memory_mb"] * 1024 * 1024,
            resource.RLIMIT_CPU: limits["cpu_seconds"],
            resource.RLIMIT_FSIZE: limits["file_mb"] * 1024 * 1024,
            resource.RLIMIT_CORE: 0}
    for which, value in caps.items():
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))


def main(argv=None) -> int:
    """``runner.py IN_DIR NOTEBOOK_NAME WORK_DIR LIMITS_JSON RESULT_FD``."""
    args = sys.argv[1:] if argv is None else argv
    in_dir, name, work, limits, result_fd = args[0], args[1], args[2], json.loads(args[3]), \
        int(args[4])
    os.set_inheritable(result_fd, False)  # the kernel (student code) must not inherit it
    try:
        limit_resources(limits)
        import shutil

        shutil.copyfile(os.path.join(in_dir, name), os.path.join(work, name))
        os.chdir(work)
        _install_otter_stub()
        cases = os.path.join(in_dir, "cases.json")
        with open(cases, encoding="utf-8") as f:
            n_cases = len(json.load(f))
        report = run(os.path.join(work, name), cases, limits["cell_seconds"],
                     limits["cell_seconds"] + n_cases * limits["case_seconds"])
    except Exception as error:  # noqa: BLE001
        report = {"status": "crash", "detail": f"{type(error).__name__}: {error}"[:300],
                  "results": None}
    with os.fdopen(result_fd, "w", encoding="utf-8") as out:
        json.dump(report, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
