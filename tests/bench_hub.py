"""How many students one class server holds (``make bench BENCH=--hub``; root only).

A real hub of the repository's configuration with 8 simulated students (tests/hub_session.py):
for k = 1, 2, 4, 8 students at once and chapters 1 and 5, each student opens the chapter's
course link in Chromium, logs in (their server starts), presses Run All and waits for the last
cell; all k together. Between rounds every server is stopped (the hub's REST API), so each
round measures a login from scratch. Printed per round: the time from pressing "Sign in" to the
finished Run All (median and 95th percentile over the k students), each student's kernel and
single-user server memory (RSS after Run All, median and largest), the hub's and the proxy's
own memory, and the machine's free memory.

    python tests/bench_hub.py [--counts 1,2,4,8] [--chapters 01_intuition,05_stability]
    python tests/bench_hub.py --from-log bench.log   # the table and estimate of a run's rows
"""

from __future__ import annotations

import json
import os
import secrets
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import headless  # noqa: E402
import hub_session as hs  # noqa: E402

RUN_ALL_TIMEOUT_S = 900
WAIT_S = 120        # what a student waits for Run All at most, for the capacity estimate
RESERVE_GIB = 2     # memory left to the system


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def _api(hub, token: str, method: str, path: str) -> None:
    request = urllib.request.Request(f"{hub.url}/hub/api{path}", method=method,
                                     headers={"Authorization": f"token {token}"})
    try:
        urllib.request.urlopen(request, timeout=60)
    except urllib.error.HTTPError as err:
        if err.code not in (202, 204, 400, 404):   # 400: no server running
            raise


def _stop_all(hub, token: str, users: list[str]) -> None:
    for user in users:
        _api(hub, token, "DELETE", f"/users/{user}/server")
    deadline = time.time() + 60
    while time.time() < deadline and any(hs.kernel_rss_mb(u) for u in users):
        time.sleep(0.5)


def _server_rss_mb(user: str) -> float:
    import pwd

    uid, total = pwd.getpwnam(user).pw_uid, 0.0
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if proc.stat().st_uid == uid and b"jupyterhub-singleuser" in (
                        proc / "cmdline").read_bytes():
                    total += hs.rss_mb(int(proc.name))
            except OSError:
                continue
    return total


def _free_mb() -> float:
    text = Path("/proc/meminfo").read_text()
    return int(text.split("MemAvailable:")[1].split()[0]) / 1024


def round_(browser, hub, users: list[str], chapter: str) -> dict:
    from book.classroom.hub import course

    settings = hub.settings()
    path = course.chapter_path(chapter)
    contexts = [browser.new_context(viewport={"width": 1280, "height": 900}) for _ in users]
    pages = [c.new_page() for c in contexts]
    for page in pages:
        page.goto(course.link(settings, path))
    started = {}
    for user, page in zip(users, pages, strict=True):
        hs.submit_login(page, user, hub.passwords[user])
        started[user] = time.perf_counter()
    ran, done = set(), {}
    deadline = time.time() + RUN_ALL_TIMEOUT_S
    while len(done) < len(users) and time.time() < deadline:
        for user, page in zip(users, pages, strict=True):
            if user in done:
                continue
            if user not in ran:
                ready = page.evaluate(f"""(p) => !!(window.jupyterapp && {hs.PANEL}
                    && {hs.PANEL}.context && {hs.PANEL}.context.path === p
                    && {hs.PANEL}.sessionContext.session
                    && {hs.PANEL}.sessionContext.session.kernel
                    && {hs.PANEL}.sessionContext.session.kernel.status === 'idle')""",
                                      f"{course.FOLDER}/{path}") if "/lab/" in page.url else False
                if ready:
                    hs.run_all(page)
                    ran.add(user)
            elif hs.finished(page):
                done[user] = time.perf_counter() - started[user]
        pages[0].wait_for_timeout(250)   # lets Playwright see the pages' navigations
    missing = [u for u in users if u not in done]
    kernels = {u: sum(hs.kernel_rss_mb(u)) for u in users}
    servers = {u: _server_rss_mb(u) for u in users}
    state = settings.state
    hub_mb = hs.rss_mb(int((state / "jupyterhub.pid").read_text()))
    proxy_mb = hs.rss_mb(int((state / "proxy.pid").read_text()))
    free = _free_mb()
    for context in contexts:
        context.close()
    times = list(done.values())
    return {"k": len(users), "chapter": chapter, "unfinished": missing,
            "median_s": statistics.median(times) if times else None,
            "p95_s": _p95(times) if times else None,
            "kernel_median_mb": statistics.median(kernels.values()),
            "kernel_max_mb": max(kernels.values()),
            "server_median_mb": statistics.median(servers.values()),
            "hub_mb": hub_mb, "proxy_mb": proxy_mb, "free_mb": free}


def main(argv: list[str]) -> int:
    from playwright.sync_api import sync_playwright

    if "--from-log" in argv:   # the table and estimate again from a run's printed rows
        text = Path(argv[argv.index("--from-log") + 1]).read_text(encoding="utf-8")
        report([json.loads(line) for line in text.splitlines() if line.startswith('{"k"')])
        return 0
    counts = [1, 2, 4, 8]
    chapters = ["01_intuition", "05_stability"]
    if "--counts" in argv:
        counts = [int(x) for x in argv[argv.index("--counts") + 1].split(",")]
    if "--chapters" in argv:
        chapters = argv[argv.index("--chapters") + 1].split(",")
    problem = hs.why_not()
    if problem:
        print(f"bench --hub: skipped ({problem})")
        return 0
    token = secrets.token_hex(16)
    extra = (f'\nc.JupyterHub.services.append({{"name": "bench", "api_token": "{token}"}})\n'
             'c.JupyterHub.load_roles.append({"name": "bench", "services": ["bench"], '
             '"scopes": ["admin:servers", "list:users"]})\n')
    with tempfile.TemporaryDirectory() as scratch:
        hub = hs.make(Path(scratch), n_students=max(counts))
        hub.config.write_text(hub.config.read_text() + extra, encoding="utf-8")
        rows = []
        try:
            start = time.perf_counter()
            setup = hub.cli("setup")
            if setup.returncode != 0:
                print(setup.stdout[-2000:], setup.stderr[-2000:])
                return 1
            print(f"hub set up from nothing in {time.perf_counter() - start:.0f} s; "
                  f"{os.cpu_count()} cores, {_free_mb() / 1024:.1f} GiB available")
            hs.read_passwords(hub)
            hs.start(hub)
            hub_pid = int((hub.hub_dir / "state" / "jupyterhub.pid").read_text())
            print(f"hub idle: {hs.rss_mb(hub_pid):.0f} MB")
            with sync_playwright() as p:
                browser = headless.launch(p)
                for chapter in chapters:
                    for k in counts:
                        users = hub.students[:k]
                        row = round_(browser, hub, users, chapter)
                        rows.append(row)
                        print(json.dumps(row))
                        _stop_all(hub, token, users)
                browser.close()
        finally:
            problems = hs.stop_and_remove(hub)
            if problems:
                print("cleanup:", problems)
    report(rows)
    return 0


def report(rows: list[dict], wait_s: float = WAIT_S, class_size: int = 300) -> None:
    """The table of the rounds, and what they say about a class: how many students the
    machine's memory holds, how many can Run All at once within ``wait_s``, and what a class of
    ``class_size`` running one chapter at once needs (cores and memory, scaled from one
    student's run; this machine's own cores and memory in the first line)."""
    total_gib = int(Path("/proc/meminfo").read_text().split()[1]) / 1024 ** 2
    print(f"\n{os.cpu_count()} cores, {total_gib:.1f} GiB; the simulated students' browsers run "
          "on the same cores (real students' run on their own computers)")
    print("\n| chapter | students at once | login → Run All done, median (p95) | kernel RSS "
          "median (max) | server RSS | hub + proxy | memory left |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        late = f" ({len(r['unfinished'])} unfinished)" if r["unfinished"] else ""
        print(f"| {r['chapter']} | {r['k']} | {r['median_s']:.0f} s ({r['p95_s']:.0f} s){late} | "
              f"{r['kernel_median_mb']:.0f} MB ({r['kernel_max_mb']:.0f}) | "
              f"{r['server_median_mb']:.0f} MB | {r['hub_mb']:.0f} + {r['proxy_mb']:.0f} MB | "
              f"{r['free_mb'] / 1024:.1f} GiB |")
    print()
    cpus = os.cpu_count() or 1
    hub_gib = max(r["hub_mb"] + r["proxy_mb"] for r in rows) / 1024
    for chapter in dict.fromkeys(r["chapter"] for r in rows):
        mine = sorted((r for r in rows if r["chapter"] == chapter and not r["unfinished"]),
                      key=lambda r: r["k"])
        per_gib = max(r["kernel_max_mb"] + r["server_median_mb"] for r in mine) / 1024
        held = int((total_gib - RESERVE_GIB - hub_gib) // per_gib)
        within = [r["k"] for r in mine if r["p95_s"] <= wait_s]
        # each more student at once adds this much to everyone's wait (least squares, k vs s)
        ks, ts = [r["k"] for r in mine], [r["median_s"] for r in mine]
        mk, mt = statistics.mean(ks), statistics.mean(ts)
        slope = sum((k - mk) * (t - mt) for k, t in zip(ks, ts, strict=True)) / max(
            sum((k - mk) ** 2 for k in ks), 1e-9)
        # one student's Run All in core-seconds: at least its time alone on one core (its
        # kernel is single-threaded), at most the machine's share per student at the largest k
        # (which also pays for that student's simulated browser)
        low = mine[0]["median_s"] if mine[0]["k"] == 1 else slope
        high = cpus * slope
        print(f"{chapter}: {per_gib:.2f} GiB a student (server + kernel): memory holds {held} "
              f"students ({total_gib:.0f} GiB less {RESERVE_GIB} for the system and "
              f"{hub_gib:.2f} for the hub); Run All done within {wait_s:.0f} s for "
              f"{max(within) if within else 0} at once; each more student at once adds "
              f"{slope:.0f} s (40 at once: ~{mt + slope * (40 - mk):.0f} s); one Run All costs "
              f"{low:.0f}-{high:.0f} core-s, so {class_size} at once within {wait_s:.0f} s need "
              f"~{class_size * low / wait_s:.0f}-{class_size * high / wait_s:.0f} cores and "
              f"~{class_size * per_gib + hub_gib:.0f} GiB")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
