"""Benchmarks of the book (``make bench``): builds, page weight and first paint, the production
layer's ratios, the phase times of the last ``make test``, notebook times, live latency,
an order typed into chapters 6 and 8 in the HTML, chapter 9's sweeps, the pretrained model's load
and sentence times.

Prints one table per section; asserts nothing. Targets: a chapter page ≤ 4 MB, first figure
≤ 1 s, production layer ≤ 1.05x, each notebook ≤ 30 s, each live update ≤ 50 ms (p50), a
typed order redrawn in the page ≤ 100 ms (median).

    python tests/bench.py                 # every section, the English edition's builds and pages
    python tests/bench.py --zh            # … and the Chinese edition's (make bench BENCH=--zh)
    python tests/bench.py --pages --layers --phases   # just these sections (any of SECTIONS)
    python tests/bench.py --pages --html _build/html  # pages of a book built already
    python tests/bench.py --hub                       # students at once on a class server (root)
    python tests/bench.py --fresh-clone               # a newcomer's `make book` (see below)
    python tests/bench.py --fresh-clone --rev main    # … of another commit, to compare

``--fresh-clone`` clones the committed tree (``--rev``, default HEAD) into a scratch folder
and runs what a newcomer runs there, with its own .venv (pip's cache as it is on this machine):
``make book`` (install included; the cold build of each edition read off its output), then
``make book`` again after a prose-only edit of one chapter, then ``make setup`` (the test
tools, which ``make book`` does not install) and ``make quick``. It prints
each wall time with the load average around it (the figures are only comparable on one
machine in one sitting) and deletes the clone. It is not in the default sections: it builds
the whole book (minutes).
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import numpy as np
import torch
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import bench_layers  # noqa: E402
import bench_pages  # noqa: E402
import headless  # noqa: E402


def notebook_times() -> dict[str, float]:
    """Each chapter notebook's clean-kernel run, in the order of book.chapters.CHAPTERS."""
    from book.chapters import CHAPTERS

    times = {}
    for path in (ROOT / "chapters" / f"{entry.page}.ipynb" for entry in CHAPTERS):
        nb = nbformat.read(path, as_version=4)
        start = time.perf_counter()
        NotebookClient(nb, timeout=300, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
        times[path.name] = time.perf_counter() - start
    return times


def _stability_explorer():
    """Chapter 5's live face over two short runs (the latency does not depend on their length)."""
    from book.chapters import ch05_stability
    from book.studies import stability
    from book.toy import orders

    data = orders.train_test_split(orders.generate(300, seed=0), 0.2, seed=0)
    runs = [stability.run(norm, "xavier", 2, steps=10, data=data) for norm in ("post", "pre")]
    return ch05_stability.stability_live(runs, data=data)


def live_latency() -> dict[str, tuple[float, float]]:
    from book.chapters import (
        ch01_intuition,
        ch02_scaling,
        ch03_walkthrough,
        ch04_pytorch,
        ch06_heads,
        ch07_mask_traps,
        ch08_seeing_attention,
        ch09_long_context,
        ch11_modern,
    )
    from book.face import live
    from book.studies import masktraps
    from book.toy.model import TinyEncoder

    cases = {
        "heads_live": (ch01_intuition.heads_live,
                                [{"n_heads": h} for h in (1, 2, 3)]),
        "dk_live": (ch02_scaling.dk_live,
                             [{"d_k": d, "n": n} for d in (1, 64, 512) for n in (100, 3000)]),
        "softmax_row_live": (ch02_scaling.softmax_row_live,
                             [{"d_k": d, "n_keys": k} for d in (1, 512) for k in (1, 16, 128)]),
        "walkthrough_live": (ch03_walkthrough.walkthrough_live,
                             [{"step": s, "matrix": m, "row": 5, "col": 3, "value": 3.0}
                              for s in ("X", "A2", "layer_norm") for m in ("X", "W_O")]),
        "mask_live": (ch04_pytorch.mask_live,
                               [{"kind": k, "length": n, "padding": p}
                                for k in masktraps.MASK_KINDS for n in (1, masktraps.MASK_MAX_REAL)
                                for p in (0, masktraps.MASK_MAX_PAD)]),
        "window_live": (ch09_long_context.window_live,
                                 [{"window": w, "n": n}
                                  for w in (0, 16, ch09_long_context.WINDOW_LIVE_MAX_W)
                                  for n in (8, ch09_long_context.WINDOW_LIVE_MAX_N)]),
        "mask_bug_live": (ch07_mask_traps.mask_bug_live,
                                   [{"bug": b, "length": n, "padding": p}
                                    for b in masktraps.BUGS for n in (1, masktraps.BUG_MAX_REAL)
                                    for p in (0, masktraps.BUG_MAX_PAD)]),
        # a new text each time: no cached maps
        "head_view_live": (ch08_seeing_attention.head_view_live,
                           [{"text": t, "layer": 1, "head": h}
                            for t in ("一碗牛肉面，不要香菜，多加辣。", "两份炒饭，葱和蒜都不要。",
                                      "老板，来三盘饺子，醋少放，再来一碗馄饨，不要香菜。")
                            for h in (0, 3)]),
        # chapter 6: up to 16 heads redrawn; untrained models draw as fast as trained ones
        "head_maps_live": (lambda: ch06_heads.head_maps_live(
            {h: TinyEncoder(d_model=32, n_heads=h) for h in (1, 4, 16)}),
            [{"n_heads": h, "layer": layer, "order": t} for h in (1, 16, 4) for layer in (0, 1)
             for t in (ch06_heads.HEAD_MAPS_ORDER, "一碗牛肉面，不要香菜，多加辣")]),
        # chapter 11: one query row's online softmax, any tile size, up to 64 keys
        "flash_live": (ch11_modern.flash_live,
                       [{"tile": t, "n_keys": n, "step": 3} for t in (1, 8, 32)
                        for n in (2, 64)]),
        # chapter 5: trained configurations redraw, others show "not trained yet" (no training)
        "stability_live": (_stability_explorer,
                           [{"norm": n, "init": "xavier", "n_layers": d, "lr": 0.01}
                            for n in ("post", "pre") for d in (1, 2, 8)]),
    }
    out = {}
    for name, (make, values) in cases.items():
        times = live.latency(make(), values, repeats=10) * 1000
        out[name] = (float(np.percentile(times, 50)), float(np.percentile(times, 95)))
    return out


LONG_NS = [256, 512, 1024, 2048, 4096]


def long_context() -> None:
    """Chapter 9 at full size: attention's time and memory up to 4096 tokens with fitted
    exponents, a whole block's time split, banded vs full, the KV cache's speed-up at 512
    new tokens, and the seven implementations with the production module's ratio."""
    from book.ideas import efficient, kvcache, longctx
    from book.kit import timing

    print("\nlong context (chapter 9); times: one thread, best of 3, interleaved rounds")
    memory = longctx.cost_sweep(LONG_NS, measure="memory")
    with timing.torch_threads(1):
        times = longctx.cost_sweep(LONG_NS, measure="time", repeats=3)
    header = "".join(f"{n:>10}" for n in LONG_NS)
    for title, sweep, scale, unit in (("peak memory", memory, 1e-6, "MB"),
                                      ("time", times, 1e3, "ms")):
        print(f"\n  {title} ({unit}) of one call, 4 heads, d_k 32, window 32")
        print(f"  {'method':10}{header}   slope")
        for m in longctx.METHODS:
            slope = longctx.fit_exponent(LONG_NS, sweep[m])
            cells = "".join(f"{v * scale:10.2f}" for v in sweep[m])
            print(f"  {m:10}{cells}   {slope:5.2f}")
    last = LONG_NS[-1]
    print(f"\n  at n = {last}: full / banded = {times['full'][-1] / times['banded'][-1]:.1f}x "
          f"time, {memory['full'][-1] / memory['banded'][-1]:.1f}x memory; masked / full = "
          f"{times['masked'][-1] / times['full'][-1]:.2f}x time")

    with timing.torch_threads(1):
        block = longctx.block_costs(LONG_NS, d_model=512, n_heads=8, repeats=2)
    print("\n  one block, d_model 512, 8 heads: ms per part, attention's share of time / FLOPs")
    print(f"  {'n':>6} {'projections':>12} {'attention':>10} {'feed-forward':>13}"
          f" {'time share':>11} {'FLOP share':>11}")
    for r in block:
        print(f"  {r['n']:6} {1e3 * r['projections']:12.1f} {1e3 * r['attention']:10.1f}"
              f" {1e3 * r['feed_forward']:13.1f} {100 * r['attention_share']:10.1f}%"
              f" {100 * r['attention_flop_share']:10.1f}%")
    print(f"  fitted slope: block {longctx.fit_exponent(LONG_NS, [r['total'] for r in block]):.2f}"
          f", attention {longctx.fit_exponent(LONG_NS, [r['attention'] for r in block]):.2f}")

    model = kvcache.TinyDecoder()
    with timing.torch_threads(1):
        kv = kvcache.generation_times(model, torch.arange(8), [64, 128, 256, 512])
    print("\n  KV cache, TinyDecoder (2 layers, d_model 128, 4 heads), greedy decoding")
    print(f"  {'new tokens':>10} {'cached s':>9} {'full s':>9} {'speed-up':>9}  same tokens")
    for r in kv:
        print(f"  {r['n_new']:10} {r['cached']:9.3f} {r['full']:9.3f} {r['speedup']:8.1f}x"
              f"  {r['same']}")

    window_kernels()
    with timing.torch_threads(1):
        env = efficient.environment()
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for device in devices:
        for seq_len in (128, 512):
            with timing.torch_threads(1):
                rows = efficient.benchmark(batch=8, seq_len=seq_len, d_model=256, n_heads=8,
                                           rounds=15, min_run_time=0.05, device=device)
            print(f"\n  implementations on {device}, batch 8, {seq_len} tokens, d_model 256, "
                  f"8 heads (torch {env['torch']}, {env['threads']} thread, {env['cpu']}, "
                  f"GPU: {env['gpu']}); x minimal SDPA layer: median [min-max] over 15 "
                  "interleaved rounds")
            for r in rows:
                print(f"    {r['label']:66} {1e3 * r['seconds']:8.2f} ms"
                      f" {r['vs_minimal']:6.2f}x [{r['vs_minimal_low']:.2f}-"
                      f"{r['vs_minimal_high']:.2f}]")
    if len(devices) == 1:
        print("\n  no CUDA GPU: GPU rows skipped")


def window_kernels(n: int = 2048, window: int = 128) -> None:
    """Chapter 9's window comparison at the article's setting: banded vs the fused kernel."""
    from book.ideas import longctx
    from book.kit import timing

    with timing.torch_threads(1):
        out = longctx.window_kernels(n, window, repeats=5)
    print(f"\n  sliding window w = {window}, n = {n}, 4 heads, d_k 32 (one thread, best of 5;"
          f" the boolean window mask, {out['mask_bytes'] / 1e6:.2f} MB, built beforehand)")
    for m in longctx.WINDOW_KERNELS:
        print(f"    {m:12} {1e3 * out['seconds'][m]:9.2f} ms {out['memory'][m] / 1e6:9.2f} MB")
    print(f"    max |sdpa_window - banded| = {out['max_diff']:.1e}")


def test_phases() -> None:
    """The phase times of the last full pytest run (tests/conftest.py keeps them)."""
    import conftest

    print("\nmake test, the last full run: time per test file (setup + call + teardown, summed "
          "over the xdist workers; a test that waits for a build counts its wait)")
    if not conftest.PHASES.exists():
        print(f"  no run recorded in {conftest.PHASES.relative_to(ROOT)}: run `make test` first")
        return
    conftest.print_phases(json.loads(conftest.PHASES.read_text(encoding="utf-8")),
                          lambda line: print(f"  {line}"))


def legibility_totals() -> None:
    """The legibility check's totals of the last browser test run (tests/test_browser.py keeps
    them, per edition: every kind summed, per width and font, and per page)."""
    path = ROOT / "_build" / "legibility-totals.json"
    print("\nlegibility findings, the last browser test run (both widths; per edition and font)")
    if not path.exists():
        print(f"  none recorded in {path.relative_to(ROOT)}: run the browser test first")
        return
    for build, record in json.loads(path.read_text(encoding="utf-8")).items():
        found = {k: v for k, v in record["totals"].items()
                 if k not in ("figures", "states") and v}
        print(f"  {build}: {record['totals']['figures']} figures, {record['totals']['states']}"
              f" states; findings {json.dumps(found) if found else 'none'}")
        for group, t in record["groups"].items():
            found = {k: v for k, v in t.items() if k not in ("figures", "states") and v}
            print(f"    {group:14} {json.dumps(found) if found else 'none'}")
        for page, kinds in record["pages"].items():
            print(f"    {page:40} {json.dumps(kinds)}")


def notebooks() -> None:
    print("\nnotebook execution, clean kernel (budget 30 s)")
    for name, secs in notebook_times().items():
        print(f"  {name:30} {secs:6.1f} s")


def latency() -> list[str]:
    print("\nlive widget update latency (target: p50 ≤ 50 ms)  p50 ms    p95 ms")
    slow = []
    for name, (p50, p95) in live_latency().items():
        verdict = "ok" if p50 <= 50 else "OVER BUDGET"
        print(f"  {name:45} {p50:7.1f} {p95:9.1f}  {verdict}")
        if p50 > 50:
            slow.append(name)
    return slow


def inpage_redraw() -> list[str]:
    """An order typed in the HTML (tests/test_browser_order.py's and test_browser_head_maps.py's
    bare pages, headless Chromium from file://): input to redraw, the page's forward pass and
    plotly's redraw, over 20 held-out orders typed into chapter 8's head view and model view and
    chapter 6's head maps (the 16-head model), each edition."""
    import statistics

    import test_browser_order as order
    from playwright.sync_api import sync_playwright

    from book.chapters.ch08_seeing_attention import MODEL_VIEW_MAX_WORDS

    print("\nan order typed in the HTML: input to redraw (target: median ≤ 100 ms)"
          "\n  view                    edition  median ms  max ms  orders")
    slow = []
    import test_browser_head_maps as maps

    from book.chapters.ch06_heads import head_maps_max_words
    from book.studies import heads
    from book.toy.model import TinyEncoder

    # chapter 6: the sweep's five shapes (seeded, untrained: the same arithmetic), 16 heads
    models = {h: TinyEncoder(d_model=heads.SETTINGS["d_model"], n_heads=h,
                             n_layers=heads.SETTINGS["n_layers"], seed=h)
              for h in heads.HEAD_COUNTS}
    views = {"head view (1 map)": ("order", order._type, order._typed_orders()[:20]),
             "model view (8 maps)": ("order_model", order._type_model,
                                     order._typed_orders(MODEL_VIEW_MAX_WORDS)[:20]),
             "ch6 head maps (16 maps)": ("head_maps",
                                         lambda cell, text: maps._type(cell, 16, 1, text),
                                         maps._held_out(head_maps_max_words(16), 20))}
    with tempfile.TemporaryDirectory() as scratch, sync_playwright() as p:
        browser = headless.launch(p)
        for name, (view, type_, texts) in views.items():
            for language in ("en", "zh"):
                path = (maps._page(Path(scratch), language, models) if view == "head_maps"
                        else order._page(Path(scratch), language, view))
                page, cell, problems = order._open(browser, path, order.legibility.DESKTOP,
                                                   view=view)
                times = [type_(cell, text)["last"]["ms"] for text in texts]
                page.context.close()
                median = statistics.median(times)
                verdict = "ok" if median <= 100 and not problems else "OVER BUDGET"
                print(f"  {name:23} {language:7} {median:9.1f} {max(times):7.1f}  "
                      f"{len(times):6}  {verdict}{'; ' + str(problems) if problems else ''}")
                if verdict != "ok":
                    slow.append(f"{name} ({language})")
        browser.close()
    return slow


def pretrained() -> None:
    import bench_pretrained

    print("\npretrained model (chapter 8b)")
    bench_pretrained.main()


# ---- a newcomer's `make book`, from a fresh clone -------------------------------------------

PROSE_EDIT_PAGE = "chapters/03_walkthrough.ipynb"
PROSE_EDIT = "A sentence added by the benchmark: a prose-only edit."
# its translation, as a translator adds it to the chapter's catalogue after `make gettext`: the
# Chinese edition's build refuses prose without one
PROSE_EDIT_ZH = "基准测试加的一句话：只改了正文。"
PROSE_EDIT_CATALOGUE = "locale/zh_CN/LC_MESSAGES/chapters/03_walkthrough.po"


def prose_edit(clone: Path) -> None:
    """Append :data:`PROSE_EDIT` to the first markdown cell of :data:`PROSE_EDIT_PAGE` in
    ``clone`` and its translation to the chapter's catalogue."""
    page = clone / PROSE_EDIT_PAGE
    notebook = json.loads(page.read_text(encoding="utf-8"))
    cell = next(c for c in notebook["cells"] if c["cell_type"] == "markdown")
    source = cell["source"]
    cell["source"] = ("".join(source) if isinstance(source, list) else source) \
        + "\n\n" + PROSE_EDIT
    # saved as JupyterLab saves it (make quick's hygiene test checks that the file is)
    from book.site import nbfiles

    page.write_text(nbfiles.as_jupyterlab_saves(json.dumps(notebook)), encoding="utf-8")
    with (clone / PROSE_EDIT_CATALOGUE).open("a", encoding="utf-8") as po:
        po.write(f'\nmsgid "{PROSE_EDIT}"\nmsgstr "{PROSE_EDIT_ZH}"\n')


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _clean_env(clone: Path) -> dict[str, str]:
    """A newcomer's shell: no PYTHONPATH or virtual environment of this checkout."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "BOOK_TEST_BUILDS", "BOOK_JOBS",
                        "BOOK_EXECUTION_CACHE", "BOOK_STUDENT", "BOOK_LANG", "BOOK_BUILD",
                        "BOOK_MEMO", "BOOK_MEMO_SALT")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(ROOT)) and "/.venv/" not in p + "/")
    return env


def _cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(cmd: list[str], cwd: Path, env: dict, log: Path) -> tuple[float, int, list]:
    """Run ``cmd``; returns (wall seconds, exit status, [(seconds since start, line)]). The
    CPU seconds it and its children used go to ``_timed.cpu`` (on a busy machine the wall
    time grows with the load, the CPU time much less)."""
    lines = []
    cpu = _cpu()
    start = time.perf_counter()
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace")
        for line in proc.stdout:
            lines.append((time.perf_counter() - start, line.rstrip("\n")))
            out.write(line)
        code = proc.wait()
    _timed.cpu = _cpu() - cpu
    return time.perf_counter() - start, code, lines


def book_phases(lines: list[tuple[float, str]]) -> dict:
    """Read the phases off ``make book``'s timed output: the install ends where make echoes
    the build command; each edition's build ends at its "Finished generating HTML" (the
    editions in order when the lines carry no [en]/[zh] prefix, as when they ran one after
    the other); the notebook executions counted from MyST-NB's or book.site.execution's
    "Executing notebook" lines."""
    install = next((t for t, line in lines if "jupyter-book build" in line
                    or "book.site.builds" in line), None)
    ends, order = {}, ["en", "zh"]
    for t, line in lines:
        if "Finished generating HTML" in line:
            match = re.match(r"\[(en|zh)\b", line)
            edition = match.group(1) if match else next((e for e in order if e not in ends),
                                                        None)
            if edition:
                ends[edition] = t
    builds = {}
    if install is not None:
        serial = not any(re.match(r"\[(en|zh)\b", line) for _, line in lines)
        previous = install
        for edition in order:
            if edition in ends:
                builds[edition] = ends[edition] - (previous if serial else install)
                previous = ends[edition]
    executions = sum("Executing notebook" in line for _, line in lines)
    return {"install": install, "builds": builds, "executions": executions}


def fresh_clone(rev: str = "HEAD") -> dict:
    """Clone ``rev`` into a scratch folder; time ``make book``, a prose-only rebuild and
    ``make quick`` there (see the module's docstring)."""
    scratch = Path(tempfile.mkdtemp(prefix="book-fresh-clone-"))
    clone = scratch / "book"
    log = scratch / "bench.log"
    commit = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, text=True,
                            capture_output=True, check=True).stdout.strip()
    print(f"\nfresh clone of {rev} ({commit}) in {clone}; the commands' output: {log}")
    try:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        subprocess.run(["git", "checkout", "-q", commit], cwd=clone, check=True)
        env = _clean_env(clone)
        python = shutil.which("python3", path=env["PATH"]) or "python3"
        make = ["make", f"PYTHON={python}"]
        figures = {"rev": rev, "commit": commit}
        load = _load()
        wall, code, lines = _timed([*make, "book"], clone, env, log)
        phases = book_phases(lines)
        figures["book"] = {"wall": wall, "cpu": _timed.cpu, "rc": code,
                           "load": (load, _load()), **phases}
        print(f"  make book, fresh clone (install included): {wall:6.1f} s ({_timed.cpu:.0f} s "
              f"CPU), rc {code}, load average {load} -> {_load()}")
        if phases["install"] is not None:
            print(f"    install (venv + pip, cache as it is) {phases['install']:6.1f} s")
        for edition, seconds in phases["builds"].items():
            print(f"    cold build of the {edition} edition  {seconds:6.1f} s")
        print(f"    notebook executions: {phases['executions']}")
        if code:
            print("  make book failed: the rest is skipped")
            return figures
        prose_edit(clone)
        load = _load()
        wall, code, lines = _timed([*make, "book"], clone, env, log)
        html = clone / "_build" / "html"
        pages = {(html / PROSE_EDIT_PAGE).with_suffix(".html"): PROSE_EDIT,
                 (html / "zh" / PROSE_EDIT_PAGE).with_suffix(".html"): PROSE_EDIT_ZH}
        shown = all(page.is_file() and text in page.read_text(encoding="utf-8")
                    for page, text in pages.items())
        executions = book_phases(lines)["executions"]
        figures["prose"] = {"wall": wall, "cpu": _timed.cpu, "rc": code,
                            "executions": executions, "shown": shown, "load": (load, _load())}
        print(f"  make book after a prose-only edit of {PROSE_EDIT_PAGE}: {wall:6.1f} s "
              f"({_timed.cpu:.0f} s CPU), rc {code}, {executions} notebook execution(s), the "
              f"edit on both editions' page: {shown}; load average {load} -> {_load()}")
        load = _load()   # make book installed the build's set only: the test tools first
        wall, code, _ = _timed([*make, "setup"], clone, env, log)
        figures["setup"] = {"wall": wall, "rc": code}
        print(f"  make setup (the test tools on top of make book's install): {wall:6.1f} s, "
              f"rc {code}")
        load = _load()
        wall, code, lines = _timed([*make, "quick"], clone, env, log)
        summary = next((line for _, line in reversed(lines) if " passed" in line), "")
        figures["quick"] = {"wall": wall, "cpu": _timed.cpu, "rc": code, "summary": summary,
                            "load": (load, _load())}
        print(f"  make quick: {wall:6.1f} s ({_timed.cpu:.0f} s CPU), rc {code} "
              f"({summary.strip('= ')}); load average {load} -> {_load()}")
        return figures
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def last_ci_total() -> None:
    """The last full pytest run's wall time (tests/conftest.py keeps it)."""
    import conftest

    if conftest.PHASES.exists():
        phases = json.loads(conftest.PHASES.read_text(encoding="utf-8"))
        print(f"\n{phases.get('command', 'make test')}, the last full run here: "
              f"{phases['wall']:.0f} s wall "
              f"({phases['when']}; builds: "
              + ", ".join(f"{e} {s:.0f} s" for e, s in phases["builds"].items()) + ")")
    else:
        print(f"\nmake test: no full run recorded in {conftest.PHASES.relative_to(ROOT)}")


SECTIONS = ("--pages", "--layers", "--phases", "--notebooks", "--live", "--inpage",
            "--long-context", "--window", "--pretrained", "--hub")
# a real class server with 8 students (root only, ~20 min): only when asked for
ON_REQUEST = ("--hub",)


def main(argv: list[str]) -> None:
    print(f"python {platform.python_version()}, torch {torch.__version__}, "
          f"{os.cpu_count()} CPU cores, torch threads {torch.get_num_threads()}, "
          f"{platform.processor() or platform.machine()}, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if "--fresh-clone" in argv:
        rev = argv[argv.index("--rev") + 1] if "--rev" in argv else "HEAD"
        fresh_clone(rev)
        last_ci_total()
        argv = [a for a in argv if a not in ("--fresh-clone", "--rev", rev)]
        if not argv:
            return
    chosen = [a for a in argv if a in SECTIONS] or [s for s in SECTIONS if s not in ON_REQUEST]
    unknown = [a for a in argv if a.startswith("--") and a not in SECTIONS + ("--zh", "--html")]
    if unknown:
        sys.exit(f"unknown option(s) {unknown}; choose from {', '.join(SECTIONS)}, --zh, --html,"
                 " --fresh-clone [--rev REV]")
    slow = []
    if "--pages" in chosen:  # builds, page weights, first paint (tests/bench_pages.py)
        if "--html" in argv:
            bench_pages.main(["--html", argv[argv.index("--html") + 1]])
        else:
            bench_pages.main(["--zh"] if "--zh" in argv else [])
    if "--layers" in chosen:  # the production-layer ratios (tests/bench_layers.py)
        bench_layers.main([])
    if "--phases" in chosen:
        test_phases()
        legibility_totals()
    if "--notebooks" in chosen:
        notebooks()
    if "--live" in chosen:
        slow = latency()
    if "--inpage" in chosen:
        slow += inpage_redraw()
    if "--long-context" in chosen:
        long_context()       # ends with the window kernels
    elif "--window" in chosen:  # just chapter 9's window comparison at the article's setting
        window_kernels()
    if "--pretrained" in chosen:
        pretrained()
    if "--hub" in chosen:   # students at once on one class server (tests/bench_hub.py)
        import bench_hub

        bench_hub.main([])
    if slow:  # the latency budget lives here, not in unit tests (they flake on a busy machine)
        sys.exit(f"explorers over their budget (live 50 ms, in-page 100 ms): {', '.join(slow)}")


if __name__ == "__main__":
    main(sys.argv[1:])
