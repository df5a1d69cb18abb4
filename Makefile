# One entry point for set-up, tests, lint and benchmarks. Everything runs inside .venv.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install test lint bench demo clean

# A fresh virtual environment with the CPU build of PyTorch (pinned by constraints.txt)
# and the package in editable mode with its test and dev extras.
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt "torch==2.13.0"
	$(PY) -m pip install --quiet -c constraints.txt -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m pytest

# The built-in demo: a character-level GPT on Shakespeare, a few minutes on a CPU; prints the
# validation loss and a sample, and writes runs/shakespeare-char/ (loss.png, checkpoints).
demo: $(STAMP)
	$(VENV)/bin/glassformer train

lint: $(STAMP)
	$(PY) -m ruff check .

bench: $(STAMP)
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .ruff_cache
