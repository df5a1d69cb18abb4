"""`make docs` (and the docs tests' site, built with the same arguments) fails on any warning:
a one-page site with one warning, built with the Makefile's mkdocs arguments, is refused."""

from __future__ import annotations

import os
import subprocess
import sys

from .conftest import make_docs_mkdocs_args


def test_the_docs_build_fails_on_a_warning(tmp_path):
    args = make_docs_mkdocs_args()
    assert args[:2] == ["build", "--strict"]
    (tmp_path / "docs").mkdir()
    (tmp_path / "mkdocs.yml").write_text("site_name: one page\nnav:\n  - index.md\n")
    (tmp_path / "docs" / "index.md").write_text("# One page\n\nSee [a page](missing.md).\n")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", *args, "-d", str(tmp_path / "site")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1, run.stderr
    assert "contains a link 'missing.md', but the target is not found" in run.stderr
    assert "Aborted with 1 warnings in strict mode!" in run.stdout + run.stderr


def test_the_site_is_built_without_the_test_extras():
    """The docs extra builds the site: the hooks and the scripts they load (the notebooks,
    the outputs, the pages' parsing of tests/docs/pages.py) import no pytest. In a process
    where pytest cannot be imported, each hook loads and a page becomes its notebook."""
    from .pages import ROOT

    code = """
import importlib.util, sys
from pathlib import Path
sys.modules["pytest"] = None  # import pytest fails
root = Path(sys.argv[1])
for hook in sorted((root / "docs/hooks").glob("*.py")):
    spec = importlib.util.spec_from_file_location(f"hook_{hook.stem}", hook)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
spec = importlib.util.spec_from_file_location("nb", root / "docs/scripts/notebooks.py")
notebooks = importlib.util.module_from_spec(spec)
sys.modules["nb"] = notebooks
spec.loader.exec_module(notebooks)
nb, _ = notebooks.notebook(root / "docs/concepts/attention.md")
print(len(nb["cells"]) > 10)
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    run = subprocess.run(
        [sys.executable, "-c", code, str(ROOT)], env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "True"
