"""The package's front door (glassformer/__init__.py): its public names, listed for the lazy
look-up in ``_SOURCES`` and for type checkers under ``if TYPE_CHECKING:``, are the same names
from the same modules, each one resolves, and ``import glassformer`` loads no PyTorch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import glassformer


def type_checking_names() -> dict[str, str]:
    tree = ast.parse(Path(glassformer.__file__).read_text(encoding="utf-8"))
    [block] = [
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    ]
    return {
        alias.name: f".{node.module}" if node.module else f".{alias.name}"
        for node in block.body
        for alias in node.names
    }


def test_the_names_are_listed_alike_and_each_resolves():
    assert type_checking_names() == glassformer._SOURCES
    assert glassformer.__all__ == sorted(glassformer._SOURCES)
    for name in glassformer.__all__:
        assert getattr(glassformer, name) is not None
    assert glassformer.Run.__name__ == "Run" and callable(glassformer.generate)


def test_importing_the_package_loads_no_torch():
    code = "import sys, glassformer; print('torch' in sys.modules, glassformer.__version__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[0] == "False"
