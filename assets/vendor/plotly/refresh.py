"""Refresh the vendored plotly.js cartesian bundle to the version the installed plotly bundles.

The book's figures use only scatter, heatmap and bar traces, so its pages load the npm package
``plotly.js-cartesian-dist-min`` (1.5 MB) instead of the full plotly.min.js (4.8 MB) that the
plotly Python package ships. Figure JSON and library must match, so the bundle is pinned to the
plotly.js version of the installed plotly; ``tests/test_page_weight.py`` and the build fail on a
mismatch. After upgrading plotly, run (needs the npm registry, nothing else)::

    .venv/bin/python assets/vendor/plotly/refresh.py

It downloads the package's tarball, checks it against the registry's sha512 integrity, writes
``plotly-cartesian.min.js`` and ``LICENSE`` here and records the provenance in ``SOURCE.json``.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import sys
import tarfile
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = "plotly.js-cartesian-dist-min"
REGISTRY = "https://registry.npmjs.org"
FILES = {"package/plotly-cartesian.min.js": "plotly-cartesian.min.js", "package/LICENSE": "LICENSE"}


def main(version: str | None = None) -> None:
    if version is None:
        import plotly.offline

        version = plotly.offline.get_plotlyjs_version()
    with urllib.request.urlopen(f"{REGISTRY}/{PACKAGE}/{version}", timeout=60) as r:
        meta = json.load(r)
    tarball, integrity = meta["dist"]["tarball"], meta["dist"]["integrity"]
    with urllib.request.urlopen(tarball, timeout=120) as r:
        blob = r.read()
    algo, _, want = integrity.partition("-")
    got = base64.b64encode(hashlib.new(algo, blob).digest()).decode()
    if got != want:
        raise SystemExit(f"{tarball}: {algo} {got} does not match the registry's {want}")
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        for member, target in FILES.items():
            (HERE / target).write_bytes(tar.extractfile(member).read())
    js = (HERE / "plotly-cartesian.min.js").read_bytes()
    source = {"package": PACKAGE, "version": version, "tarball": tarball, "integrity": integrity,
              "sha256": hashlib.sha256(js).hexdigest()}
    (HERE / "SOURCE.json").write_text(json.dumps(source, indent=2) + "\n", encoding="utf-8")
    print(f"{PACKAGE} {version}: {len(js):,} bytes written to {HERE}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
