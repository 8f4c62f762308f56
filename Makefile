# The two commands of the README: `make book` and `make test`. Everything installs itself into .venv.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HTML := _build/html/index.html

.PHONY: setup book test quick lint bench clean browser-deps assignments grade grade-demo \
	git-filter test-jupyter

$(STAMP): requirements-base.txt requirements.txt requirements-dev.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	set -o pipefail; $(PY) -m pip install --quiet -r requirements-dev.txt 2>&1 | { grep -v "is ignored" || true; }
	touch $(STAMP)

setup: $(STAMP) git-filter

# Committed notebooks stay output-free whatever a reader's JupyterLab saves: git runs nbstripout
# on every chapter notebook it stages or diffs (.gitattributes), so outputs, execution counts,
# widget state and jupyterlab-myst's evaluated roles never reach a commit or a `git status`.
# The commands are relative to the worktree root, where git runs filters. NO_GIT_FILTER=1 skips.
NBSTRIPOUT := .venv/bin/python -m nbstripout --keep-id --extra-keys "cell.metadata.user_expressions"
git-filter: $(STAMP)
	@if [ -z "$(NO_GIT_FILTER)" ] && git rev-parse --git-dir >/dev/null 2>&1; then \
	  git config filter.nbstripout.clean '$(NBSTRIPOUT)' && \
	  git config filter.nbstripout.smudge cat && \
	  git config diff.ipynb.textconv '$(NBSTRIPOUT) -t'; fi

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

# The contributors' inner loop: lint + unit/property tests, no notebook execution, no build.
quick: setup
	$(VENV)/bin/ruff check book tests chapters
	$(PY) -m pytest -m "not slow" -q

# JupyterLab itself: Run All in every chapter, every control moved (three chapters run in
# `make test`; this runs all ten).
test-jupyter: setup browser-deps
	BOOK_JUPYTER_ALL=1 $(PY) -m pytest tests/test_jupyterlab.py -q

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
