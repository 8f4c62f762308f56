"""Rebuild the vendored plotly.js bundle: only the traces the book draws, at the version the
installed plotly generates figures for.

The book's figures use three trace types (scatter, bar, heatmap; tests/test_page_weight.py
scans the sources for others). plotly.js publishes a full bundle (4.8 MB, the one the plotly
Python package ships) and partial ones; the smallest holding a heatmap, "cartesian" (1.5 MB),
adds ten trace types the book never draws, and Chromium took about twice as long to evaluate
it as a bundle of just these three (measured: ``tests/bench_pages.py``). So the book builds its
own from plotly.js's sources, the way plotly.js documents custom bundles (``lib/core`` plus the
trace modules, bundled with esbuild as plotly.js's own ``esbuild-config.js`` does).

Figure JSON and library must match, so the bundle is pinned to the plotly.js version of the
installed plotly; ``tests/test_page_weight.py`` and the build fail on a mismatch. After
upgrading plotly, run (needs node, npm and the npm registry; ``make book`` needs none of them,
it uses the committed bundle)::

    .venv/bin/python assets/vendor/plotly/refresh.py

It downloads plotly.js's tarball and checks it against the registry's sha512 integrity, installs
it with its runtime dependencies and the pinned build tools in a temporary folder, bundles
``plotly-book.min.js`` here, and writes ``LICENSE`` (plotly.js's), ``THIRD_PARTY_LICENSES.txt``
(every other package whose code is in the bundle, with its licence text) and ``SOURCE.json``
(provenance: tarball, integrity, tools, bundled packages and versions, the bundle's sha256).
Two runs with the same dependency versions write the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))
from book.face.display import TEMPLATE_TRACES  # noqa: E402  (the trace types the book draws)

BUNDLE = "plotly-book.min.js"
PACKAGE = "plotly.js"
REGISTRY = "https://registry.npmjs.org"
# the trace modules to register: scatter is part of plotly.js's core
TRACES = tuple(sorted(set(TEMPLATE_TRACES) - {"scatter"}))
# The build tools, pinned (plotly.js 4.1.1's own build uses esbuild ^0.28.1 and this plugin;
# its CSS-inlining plugin named each <style> by the hash of the file's absolute path, so two
# builds in two temporary folders differed: build.js inlines CSS itself, by relative path).
TOOLS = {"esbuild": "0.28.1", "esbuild-plugin-environment": "0.5.0"}
# V8's explicit compile hint: compile every function while the script loads (off the main
# thread where the browser streams the script) instead of lazily at the first figure.
COMPILE_HINT = "//# allFunctionsCalledOnLoad"
LICENCE_FILES = ("LICENSE", "LICENSE.md", "LICENSE.txt", "LICENCE", "license", "license.md",
                 "LICENSE-MIT", "COPYING")

BUILD_JS = r"""
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const esbuild = require('esbuild');
const { environmentPlugin } = require('esbuild-plugin-environment');
// a required .css file becomes code that adds it to the page once, as a <style>
const inlineCSS = { name: 'inline-css', setup(build) {
  build.onLoad({ filter: /\.css$/ }, (args) => {
    const rel = path.relative(process.cwd(), args.path).split(path.sep).join('/');
    const id = JSON.stringify(crypto.createHash('sha256').update(rel).digest('hex'));
    const css = JSON.stringify(fs.readFileSync(args.path, 'utf8'));
    return { loader: 'js', contents: `(function(){if(!document.getElementById(${id})){` +
      `var e=document.createElement('style');e.id=${id};e.textContent=${css};` +
      `document.head.appendChild(e);}})();` };
  });
} };
const [entry, outfile, banner] = process.argv.slice(2);
esbuild.build({
  entryPoints: [entry], outfile, format: 'iife', globalName: 'Plotly', bundle: true,
  minify: true, sourcemap: false, legalComments: 'eof', metafile: true, banner: { js: banner },
  plugins: [inlineCSS, environmentPlugin({ NODE_DEBUG: false })],
  define: { global: 'window', 'define.amd': 'false' }, target: 'es2016', logLevel: 'warning'
}).then(r => fs.writeFileSync(outfile + '.meta.json', JSON.stringify(r.metafile)))
  .catch(() => process.exit(1));
"""


def banner(version: str) -> str:
    traces = ", ".join(("scatter",) + TRACES)
    return (f"{COMPILE_HINT}\n/**\n* plotly.js (book: {traces} - minified) v{version}\n"
            "* Copyright 2012-2026, Plotly, Inc.\n* All rights reserved.\n"
            "* Licensed under the MIT license\n"
            "* Built by assets/vendor/plotly/refresh.py from plotly.js's sources.\n*/")


def entry_js() -> str:
    modules = ", ".join(f"require('plotly.js/lib/{t}')" for t in TRACES)
    return (f"'use strict';\nvar Plotly = require('plotly.js/lib/core');\n"
            f"Plotly.register([{modules}]);\nmodule.exports = Plotly;\n")


def fetch_tarball(version: str, into: Path) -> dict:
    with urllib.request.urlopen(f"{REGISTRY}/{PACKAGE}/{version}", timeout=60) as r:
        meta = json.load(r)
    tarball, integrity = meta["dist"]["tarball"], meta["dist"]["integrity"]
    with urllib.request.urlopen(tarball, timeout=300) as r:
        blob = r.read()
    algo, _, want = integrity.partition("-")
    got = base64.b64encode(hashlib.new(algo, blob).digest()).decode()
    if got != want:
        raise SystemExit(f"{tarball}: {algo} {got} does not match the registry's {want}")
    (into / "plotly.js.tgz").write_bytes(blob)
    return {"tarball": tarball, "integrity": integrity}


def run(cmd: list[str], cwd: Path) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")


def bundled_packages(work: Path, meta: dict) -> dict[str, dict]:
    """The npm packages whose files esbuild put in the bundle: version, licence, licence text."""
    found: dict[str, dict] = {}
    for path in meta["inputs"]:
        parts = Path(path).parts
        if "node_modules" not in parts:
            continue
        i = len(parts) - 1 - parts[::-1].index("node_modules")
        name_parts = parts[i + 1:i + 3] if parts[i + 1].startswith("@") else parts[i + 1:i + 2]
        root = work.joinpath(*parts[:i + 1], *name_parts)
        name = "/".join(name_parts)
        if name in found:
            continue
        info = json.loads((root / "package.json").read_text(encoding="utf-8"))
        text = next(((root / f).read_text(encoding="utf-8", errors="replace")
                     for f in LICENCE_FILES if (root / f).is_file()), None)
        found[name] = {"version": info["version"], "license": info.get("license"), "text": text}
    return dict(sorted(found.items()))


def main(version: str | None = None) -> None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        raise SystemExit("refresh.py needs node and npm (e.g. apt-get install -y nodejs npm)")
    if version is None:
        import plotly.offline

        version = plotly.offline.get_plotlyjs_version()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        source = fetch_tarball(version, work)
        (work / "package.json").write_text(json.dumps({
            "private": True, "dependencies": {PACKAGE: "file:plotly.js.tgz", **TOOLS}}, indent=2),
            encoding="utf-8")
        run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--omit=dev"], work)
        (work / "entry.js").write_text(entry_js(), encoding="utf-8")
        (work / "build.js").write_text(BUILD_JS, encoding="utf-8")
        out = work / BUNDLE
        run(["node", "build.js", "entry.js", str(out), banner(version)], work)
        meta = json.loads((work / f"{BUNDLE}.meta.json").read_text(encoding="utf-8"))
        packages = bundled_packages(work, meta)
        shutil.copy2(out, HERE / BUNDLE)
        shutil.copy2(work / "node_modules" / PACKAGE / "LICENSE", HERE / "LICENSE")
    others = {k: v for k, v in packages.items() if k != PACKAGE}
    missing = sorted(k for k, v in others.items() if not v["text"])
    licences = [f"Third-party code in {BUNDLE} (besides plotly.js, see LICENSE), as bundled by "
                "assets/vendor/plotly/refresh.py.\n"]
    for name, info in others.items():
        text = info["text"] or f"(no licence file in the package; package.json says: " \
                               f"{info['license']})\n"
        licences.append(f"{'=' * 78}\n{name} {info['version']} ({info['license']})\n"
                        f"{'=' * 78}\n{text.rstrip()}\n")
    (HERE / "THIRD_PARTY_LICENSES.txt").write_text("\n".join(licences), encoding="utf-8")
    js = (HERE / BUNDLE).read_bytes()
    record = {"package": PACKAGE, "version": version, **source,
              "traces": ["scatter", *TRACES], "tools": TOOLS,
              "bundled": {k: {"version": v["version"], "license": v["license"]}
                          for k, v in packages.items()},
              "sha256": hashlib.sha256(js).hexdigest()}
    (HERE / "SOURCE.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"{BUNDLE} (plotly.js {version}: {', '.join(record['traces'])}): {len(js):,} bytes, "
          f"{len(packages)} packages bundled, written to {HERE}")
    if missing:
        print(f"no licence file found in: {', '.join(missing)} (their package.json licence is "
              "listed in THIRD_PARTY_LICENSES.txt)")


if __name__ == "__main__":
    main(*sys.argv[1:2])
