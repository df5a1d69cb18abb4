"""The docs tests' shared site: built once for the whole run, as ``make docs`` builds it. The
pages' parsing is tests/docs/pages.py."""

from __future__ import annotations

import fcntl
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from .pages import ROOT


def make_docs_mkdocs_args() -> list[str]:
    """The arguments the Makefile's ``docs`` target gives mkdocs (``build --strict``), so the
    tests build the site exactly as ``make docs`` does."""
    recipe = (ROOT / "Makefile").read_text().split("\ndocs:", 1)[1].split("\n\n", 1)[0]
    line = next(line for line in recipe.splitlines() if "/mkdocs " in line)
    words = shlex.split(line)
    return words[next(i for i, w in enumerate(words) if w.endswith("/mkdocs")) + 1 :]


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """The site as `make docs` builds it (the benchmark tables it includes, then a strict
    mkdocs build), into a temporary folder: built once for the whole run, shared by the test
    workers (the first to need it builds it under a lock; the others wait for it)."""
    base = tmp_path_factory.getbasetemp()
    # under xdist, each worker's basetemp sits in the run's own folder, which they share; a
    # run without workers has that folder itself (its parent holds every earlier run)
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    out, done_mark = shared / "site", shared / "site.built"
    with open(shared / "site.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done_mark.exists():
            env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "NO_MKDOCS_2_WARNING": "1"}
            for argv in (
                [sys.executable, "docs/scripts/benchmark_pages.py"],
                [sys.executable, "-m", "mkdocs", *make_docs_mkdocs_args(), "-d", str(out)],
            ):
                run = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
                assert run.returncode == 0, f"{' '.join(argv[1:])} failed:\n{run.stderr[-3000:]}"
            done_mark.touch()
    return out
