"""Hostile and broken submissions: the batch completes, each gets its honest score or an error
row naming it, nothing outside its sandbox changes and no other grade moves.

One batch grades every case below (assignment 1, 30 points) next to honest twins (the full,
partial, blank and "garbage" answers without the attack); a hostile notebook must score
exactly what its twin scores. Constant and shape-only answers (zeros, all True, the input
returned) earn at most each question's public share, and a correct answer computed in float32
earns full marks. Run with ``-s`` to see the case → expected → observed table.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import sys
import time
import zipfile
from pathlib import Path

import nbformat
import pytest

from book import classroom
from book.classroom import sandbox

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(sandbox.bwrap() is None, reason="needs bubblewrap (bwrap)")]

STEM = "01_attention_numpy"
LIMITS = classroom.Limits(wall_seconds=45, cell_seconds=8, case_seconds=2)

GARBAGE = {  # right shapes, wrong values
    "softmax": "def softmax(x):\n    return np.zeros_like(np.asarray(x, dtype=float))",
    "attention": "def attention(Q, K, V, mask=None):\n"
                 "    return np.zeros((len(Q), np.shape(V)[1])), np.zeros((len(Q), len(K)))",
    "causal_mask": "def causal_mask(n):\n    return np.zeros((n, n), dtype=bool)",
}
ALL_TRUE = {  # constant answers: ones, an all-True mask
    "softmax": "def softmax(x):\n    return np.ones_like(np.asarray(x, dtype=float))",
    "attention": "def attention(Q, K, V, mask=None):\n"
                 "    return np.ones((len(Q), np.shape(V)[1])), np.ones((len(Q), len(K)))",
    "causal_mask": "def causal_mask(n):\n    return np.ones((n, n), dtype=bool)",
}
THE_INPUT = {  # shape-only answers: the input handed back
    "softmax": "def softmax(x):\n    return x",
    "attention": "def attention(Q, K, V, mask=None):\n"
                 "    w = np.eye(len(Q), len(K)) if mask is None else np.asarray(mask, float)\n"
                 "    return np.resize(V, (len(Q), np.shape(V)[1])), w",
    "causal_mask": "def causal_mask(n):\n    return np.eye(n, dtype=bool)",
}
FLOAT32 = {  # right, computed in float32 (nothing in the assignment asks for float64)
    "softmax": "import torch\ndef softmax(x):\n"
               "    return torch.softmax(torch.as_tensor(np.asarray(x), dtype=torch.float32),"
               " -1).numpy()",
    "attention": "def attention(Q, K, V, mask=None):\n"
                 "    Q, K, V = (np.asarray(a, dtype=np.float32) for a in (Q, K, V))\n"
                 "    s = Q @ K.T / np.sqrt(np.float32(Q.shape[-1]))\n"
                 "    if mask is not None:\n"
                 "        s = np.where(mask, s, np.float32(-np.inf))\n"
                 "    w = np.exp(s - s.max(axis=-1, keepdims=True))\n"
                 "    w = w / w.sum(axis=-1, keepdims=True)\n"
                 "    return w @ V, w",
}
FROM_BOOK = {
    "softmax": "import sys, os\nsys.path.insert(0, os.path.dirname(sys.prefix))\n"
               "from book.ideas.attention import softmax",
    "attention": "from book.ideas.attention import scaled_dot_product_attention as attention",
    "causal_mask": "from book.ideas.masks import causal_mask as _m\n"
                   "def causal_mask(n):\n    return _m(n).numpy()",
}
PATCH_OTTER = """
import otter
otter.Notebook.check = lambda *a, **k: None
try:
    import otter.test_files.abstract_test as t
    t.TestFile.grade = property(lambda self: 1.0)
    t.TestFile.all_or_nothing = False
except Exception as e:
    print("otter patch failed:", e)
"""
WRAP_PICKLE = """
import pickle
_real_dump = pickle.dump
def _flip(obj, f, *a, **k):
    for r in getattr(obj, "results", {}).values():
        r.score = r.possible
    return _real_dump(obj, f, *a, **k)
pickle.dump = _flip
"""
REBIND_BOOK = """
import sys, types
fake = types.ModuleType("book")
fake.attention = types.SimpleNamespace(softmax=softmax, scaled_dot_product_attention=attention)
sys.modules["book"] = sys.modules["book.ideas.attention"] = fake
try:
    import book.ideas.masks
    book.ideas.masks.causal_mask = lambda n: causal_mask(n)
except Exception as e:
    print("rebinding failed:", e)
"""
WRITE_PTH = """
import site
for folder in site.getsitepackages():
    try:
        with open(folder + "/zz_hack.pth", "w") as f:
            f.write("import builtins; builtins.HACKED = True\\n")
        print("wrote", folder)
    except OSError as e:
        print("pth failed:", e)
"""
READ_SECRETS = """
import glob, os, sys
root = os.path.dirname(sys.prefix)
for pattern in ["/grading/in/*", root + "/assignments/*", root + "/book/classroom/*",
                root + "/build/assignments/*/*", "/root/*", "/work/*"]:
    print(pattern, glob.glob(pattern))
"""
NETWORK = """
import socket
try:
    socket.create_connection(("1.1.1.1", 80), timeout=3)
    def softmax(x):  # only a connected sandbox loses these points
        return x
except OSError as e:
    print("network:", e)
"""
PATCH_COMPARISON = """
import numpy
numpy.allclose = lambda *a, **k: True
numpy.array_equal = lambda *a, **k: True
numpy.isfinite = lambda x: numpy.ones(numpy.shape(x), dtype=bool)
try:
    import book.classroom.compare as s
    s.close_to = lambda *a, **k: (lambda out: None)
except ImportError as e:
    print("no comparison here:", e)
"""
HANG_ON_3D = ("def softmax(x):\n    x = np.asarray(x, dtype=float)\n    while x.ndim == 3:\n"
              "        pass\n    e = np.exp(x - x.max(axis=-1, keepdims=True))\n"
              "    return e / e.sum(axis=-1, keepdims=True)")


def with_cells(nb, answers=None, append=(), move_below=None):
    """A copy of ``nb`` with answer cells replaced, code cells appended, or a cell moved."""
    nb = nbformat.from_dict(nb)
    for func, source in (answers or {}).items():
        [cell] = [c for c in nb.cells if c.source.startswith(f"def {func}(")]
        cell.source = source
    for source in append:
        nb.cells.append(nbformat.v4.new_code_cell(source))
    if move_below:
        [cell] = [c for c in nb.cells if c.source.startswith(f"def {move_below}(")]
        nb.cells.remove(cell)
        nb.cells.append(cell)
    return nb


def snapshot(*folders) -> dict:
    """Path → sha256 of every file under ``folders`` (site-packages: top-level names only)."""
    out = {}
    for folder in folders:
        for path in Path(folder).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    for folder in {Path(p) for p in sys.path if p.endswith("site-packages")}:
        out[str(folder)] = sorted(p.name for p in folder.iterdir())
    return out


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    src = tmp_path_factory.mktemp("src")
    shutil.copy(classroom.SOURCES / f"{STEM}.ipynb", src)
    generated = classroom.generate(tmp_path_factory.mktemp("assign"), src,
                                   check_solutions=False)[STEM]
    full = nbformat.read(generated["solutions"], as_version=4)
    blank = nbformat.read(generated["student"], as_version=4)
    partial = nbformat.read(generated["solutions"], as_version=4)
    for old, new in classroom.PARTIAL_MISTAKES[STEM]:
        for c in partial.cells:
            c.source = c.source.replace(old, new)
    subs = tmp_path_factory.mktemp("submissions")
    victim = subs / "victim.ipynb"
    rewrite = (f"import glob\nfor p in [{str(victim)!r}] + glob.glob('/grading/**/*.ipynb', "
               "recursive=True) + glob.glob('/work/**/*.ipynb', recursive=True):\n"
               "    try:\n        open(p, 'w').write('{}')\n        print('overwrote', p)\n"
               "    except OSError as e:\n        print(e)")
    # (file, notebook or bytes, expected: a twin's name, a score, or "error:<words>")
    cases = [
        ("full.ipynb", full, 30), ("partial.ipynb", partial, "partial.ipynb"),
        ("blank.ipynb", blank, 0), ("garbage.ipynb", with_cells(blank, GARBAGE), "constant"),
        ("constant_all_true.ipynb", with_cells(blank, ALL_TRUE), "constant"),
        ("constant_the_input.ipynb", with_cells(blank, THE_INPUT), "constant"),
        ("constant_all_true_on_partial.ipynb",
         with_cells(partial, {"causal_mask": ALL_TRUE["causal_mask"]}), "partial.ipynb"),
        ("float32.ipynb", with_cells(full, FLOAT32), 30),
        ("patch_otter.ipynb", with_cells(blank, append=[PATCH_OTTER]), 0),
        ("wrap_pickle.ipynb", with_cells(blank, append=[WRAP_PICKLE]), 0),
        ("rebind_book.ipynb", with_cells(partial, append=[REBIND_BOOK]), "partial.ipynb"),
        ("import_reference.ipynb", with_cells(blank, FROM_BOOK), 0),
        ("write_pth.ipynb", with_cells(blank, append=[WRITE_PTH]), 0),
        ("write_pth_zz_blank_after.ipynb", blank, 0),
        ("read_secrets.ipynb", with_cells(blank, append=[READ_SECRETS]), 0),
        ("rewrite_other.ipynb", with_cells(full, append=[rewrite]), 30),
        ("victim.ipynb", full, 30),
        ("os_exit.ipynb", with_cells(full, append=["import os\nos._exit(0)"]),
         "error:kernel died"),
        ("kill_kernel.ipynb", with_cells(full, append=["import os, signal\n"
                                                       "os.kill(os.getpid(), signal.SIGKILL)"]),
         "error:kernel died"),
        ("while_true.ipynb", with_cells(full, append=["while True:\n    pass"]),
         "error:timeout"),
        ("hangs_on_hidden_input.ipynb", with_cells(full, {"softmax": HANG_ON_3D}), 25),
        ("memory_hog.ipynb", with_cells(full, append=["x = bytearray(64 * 2**30)"]), 30),
        ("network.ipynb", with_cells(full, append=[NETWORK]), 30),
        ("patch_comparison.ipynb", with_cells(blank, GARBAGE, append=[PATCH_COMPARISON]),
         "garbage"),
        ("invalid_json.ipynb", b'{"cells": [', "error:not valid JSON"),
        ("empty.ipynb", b"", "error:empty file"),
        ("no_metadata.ipynb", nbformat.read(classroom.SOURCES / f"{STEM}.ipynb", 4),
         "error:no otter metadata"),
        ("unknown_assignment.ipynb", None, "error:unknown assignment"),
        ("kernel_myenv.ipynb", None, 30),
        ("My Homework (final) v2.ipynb", full, 30),
        ("answer_below_check.ipynb", with_cells(full, move_below="softmax"), 30),
        ("notes.txt", b"my answers are in the notebook", "skipped:not a notebook"),
        ("bundle.zip/full.ipynb", None, 30),
        ("bundle.zip/readme.md", None, "skipped:not a notebook"),
    ]
    unknown = nbformat.from_dict(full)
    unknown.metadata["otter"]["assignment_name"] = "attention-99-nope"
    myenv = nbformat.from_dict(full)
    myenv.metadata["kernelspec"] = {"name": "myenv", "display_name": "My env",
                                    "language": "python"}
    special = {"unknown_assignment.ipynb": unknown, "kernel_myenv.ipynb": myenv}
    for name, content, _ in cases:
        if name.startswith("bundle.zip"):
            continue
        content = special.get(name, content)
        data = content if isinstance(content, bytes) else nbformat.writes(content).encode()
        (subs / name).write_bytes(data)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("full.ipynb", nbformat.writes(full))
        z.writestr("readme.md", "hello")
    (subs / "bundle.zip").write_bytes(buffer.getvalue())

    watched = [subs, classroom.ROOT / "book", classroom.ROOT / "assignments"]
    before = snapshot(*watched)
    csv_path = tmp_path_factory.mktemp("out") / "grades.csv"
    csv_path.write_text("stale,grades\n")
    start = time.perf_counter()
    rows = classroom.grade(subs, csv_path, seed=12, limits=LIMITS, progress=False)
    seconds = time.perf_counter() - start
    after = snapshot(*watched)
    return {"rows": rows, "cases": cases, "seconds": seconds, "csv": csv_path,
            "before": before, "after": after, "victim": victim, "full": full}


def totals(rows):
    out = {}
    for r in rows:
        if r["status"] == "written":   # the written item: its text for the teacher, no score
            continue
        t = out.setdefault(r["submission"], {"score": 0.0, "status": r["status"],
                                             "detail": r["detail"]})
        t["score"] += float(r["score"]) if r["status"] == "graded" else 0
        if r["status"] != "graded":
            t.update(status=r["status"], detail=r["detail"])
    return out


def public_share() -> dict[str, float]:
    cases = classroom.ASSIGNMENTS["attention-01-numpy"].cases(0)
    return {c.question: c.points for c in cases if c.public}


def test_every_case_gets_its_honest_score_or_an_error_row(batch, capsys):
    got = totals(batch["rows"])
    garbage = got["garbage.ipynb"]["score"]
    public = public_share()
    table = []
    for name, _, expected in batch["cases"]:
        assert name in got, f"{name} is missing from the CSV"
        observed = got[name]
        if expected == "garbage":
            expected = garbage
        elif isinstance(expected, str) and expected.endswith(".ipynb"):
            expected = got[expected]["score"]
        if expected == "constant":  # each question: at most its public check's points
            per = {r["question"]: float(r["score"]) for r in batch["rows"]
                   if r["submission"] == name and r["status"] == "graded"}
            ok = set(per) == set(public) and all(per[q] <= public[q] for q in public)
            expected = "each ≤ " + "/".join(f"{public[q]:g}" for q in sorted(public))
            shown = "/".join(f"{per.get(q, 'missing')}" for q in sorted(public))
        elif isinstance(expected, str):
            status, words = expected.split(":", 1)
            ok = observed["status"] == status and words in observed["detail"]
            shown = f"{observed['status']}: {observed['detail']}"
        else:
            ok = observed["status"] == "graded" and observed["score"] == expected
            shown = f"{observed['score']:g}" + (f" ({observed['detail'][:60]})"
                                                if observed["detail"] else "")
        table.append((name, str(expected), shown[:110], ok))
    with capsys.disabled():
        print(f"\n{'case':34} {'expected':28} observed")
        for name, expected, shown, ok in table:
            print(f"{name:34} {expected:28} {shown}{'' if ok else '   <-- WRONG'}")
        n = len({r['submission'] for r in batch['rows']})
        print(f"{n} files graded in {batch['seconds']:.1f} s, "
              f"{batch['seconds'] / n:.1f} s per file")
    assert all(ok for *_, ok in table), [t for t in table if not t[-1]]
    assert 0 < got["partial.ipynb"]["score"] < 30 and garbage < 30
    assert "replaced by python3" in got["kernel_myenv.ipynb"]["detail"]


def test_the_batch_completes_and_writes_a_fresh_csv(batch):
    csv_path = batch["csv"]
    assert csv_path.exists() and not csv_path.with_name("grades.csv.incomplete").exists()
    rows = classroom.grading.read_csv(csv_path)
    assert list(rows[0]) == classroom.FIELDS and "stale" not in csv_path.read_text()
    assert len(rows) == len(batch["rows"])


def test_nothing_outside_the_sandboxes_changes(batch):
    before, after = batch["before"], batch["after"]
    changed = [p for p in set(before) | set(after) if before.get(p) != after.get(p)]
    assert not changed, changed
    assert batch["victim"].read_text() == nbformat.writes(batch["full"])


def test_grading_time_per_notebook(batch):
    ran = {r["submission"] for r in batch["rows"] if r["status"] != "skipped"}
    per = batch["seconds"] / len(ran)
    # while_true waits for its cell limit; the others take ~2 s on an idle 2-core machine
    assert per < 2 * LIMITS.cell_seconds, per


def test_inside_a_graded_notebook_every_hostile_attempt_fails(tmp_path):
    victim = tmp_path / "victim.ipynb"
    victim.write_text("a classmate's notebook")
    report = sandbox.self_check(others=(victim,))
    print(report)
    lines = [line for line in report.splitlines() if line.startswith(("ALLOWED", "blocked"))]
    assert report.startswith("isolation: bubblewrap")
    assert len(lines) == 10 and all(line.startswith("blocked") for line in lines), report
    assert victim.read_text() == "a classmate's notebook"
    assert not (classroom.ROOT / "SANDBOX_ESCAPE.txt").exists()


# ---- the same attacks on the assignments of issue 24 ------------------------------------------

NEW_STEMS = ("05_scaling", "06_stability", "07_masks")


@pytest.fixture(scope="module")
def new_batch(tmp_path_factory):
    """Per new assignment: full, partial, blank, the partial one patching the comparisons,
    the full one reading secrets and writing a .pth, and one that kills its kernel."""
    src = tmp_path_factory.mktemp("src-new")
    for stem in NEW_STEMS:
        shutil.copy(classroom.SOURCES / f"{stem}.ipynb", src)
    generated = classroom.generate(tmp_path_factory.mktemp("assign-new"), src,
                                   check_solutions=False)
    subs = tmp_path_factory.mktemp("submissions-new")
    for stem, paths in generated.items():
        full = nbformat.read(paths["solutions"], as_version=4)
        partial = nbformat.read(paths["solutions"], as_version=4)
        for old, new in classroom.PARTIAL_MISTAKES[stem]:
            for c in partial.cells:
                c.source = c.source.replace(old, new)
        notebooks = {
            "full": full, "partial": partial,
            "blank": nbformat.read(paths["student"], as_version=4),
            "patch_comparison": with_cells(partial, append=[PATCH_COMPARISON]),
            "secrets_and_pth": with_cells(full, append=[READ_SECRETS, WRITE_PTH]),
            "os_exit": with_cells(full, append=["import os\nos._exit(0)"]),
        }
        for kind, nb in notebooks.items():
            (subs / f"{stem}__{kind}.ipynb").write_text(nbformat.writes(nb), encoding="utf-8")
    watched = [subs, classroom.ROOT / "book", classroom.ROOT / "assignments"]
    before = snapshot(*watched)
    # the default limits: `import torch` (assignment 6) can take longer than LIMITS allow
    rows = classroom.grade(subs, None, seed=5, jobs=2, progress=False)
    return {"rows": rows, "before": before, "after": snapshot(*watched)}


# Issue 24's three new assignments under the same attacks (one more sandboxed batch of 18
# notebooks, `new_batch`): both its tests are make test-all's and CI's; make test keeps the
# attacks on assignment 1 above, in the same sandbox.
@pytest.mark.extended
@pytest.mark.parametrize("stem", NEW_STEMS)
def test_new_assignments_resist_the_same_attacks(new_batch, stem):
    got = totals([r for r in new_batch["rows"] if r["submission"].startswith(stem)])
    possible = sum(classroom.ASSIGNMENTS[f"attention-{stem[:2]}-{stem[3:]}"]
                   .questions().values())
    assert got[f"{stem}__full.ipynb"]["score"] == possible, got
    partial = got[f"{stem}__partial.ipynb"]["score"]
    assert 0 < partial < possible, got
    assert got[f"{stem}__blank.ipynb"]["score"] == 0, got
    assert got[f"{stem}__patch_comparison.ipynb"]["score"] == partial, got
    assert got[f"{stem}__secrets_and_pth.ipynb"]["score"] == possible, got
    assert got[f"{stem}__os_exit.ipynb"]["status"] == "error", got
    assert "kernel died" in got[f"{stem}__os_exit.ipynb"]["detail"], got


@pytest.mark.extended
def test_nothing_outside_the_new_assignments_sandboxes_changes(new_batch):
    before, after = new_batch["before"], new_batch["after"]
    assert not [p for p in set(before) | set(after) if before.get(p) != after.get(p)]
