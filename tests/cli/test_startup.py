"""``glassformer --help`` and user errors answer in about the time of ``import torch``: the
command imports nothing heavy (torch.distributed.checkpoint, transformers, matplotlib,
tensorboard) that ``import torch`` alone does not already load; ``glassformer --version`` does
not load PyTorch at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import glassformer

HEAVY = ("torch.distributed", "transformers", "matplotlib", "tensorboard", "sympy")

# In a fresh interpreter: the modules after `import torch` alone, then after each command.
PROBE = """
import contextlib, io, json, sys
import torch

before = set(sys.modules)
from glassformer.cli import main

loaded = {}
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exit:
            code = exit.code
    loaded[" ".join(argv)] = [code, sorted(set(sys.modules) - before)]
print(json.dumps(loaded))
"""


def test_help_and_user_errors_import_nothing_heavy(tmp_path):
    commands = [["--help"], ["train", "--help"], ["train", "--data", "nosuchfile"]]
    src = str(Path(glassformer.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(commands)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout)
    assert [code for code, _ in loaded.values()] == [0, 0, 2]
    for command, (_, modules) in loaded.items():
        heavy = [m for m in modules if m.startswith(HEAVY)]
        assert heavy == [], (command, heavy)


def test_version_answers_without_importing_torch(tmp_path):
    """``python -m glassformer --version`` (and an abbreviation) loads no PyTorch: the modules
    it imports, as ``python -X importtime`` lists them, include no ``torch``."""
    src = str(Path(glassformer.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    for flag in ("--version", "--vers"):
        result = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "glassformer", flag],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=120,
        )
        assert (result.returncode, result.stdout) == (0, f"glassformer {glassformer.__version__}\n")
        imported = [
            line.rsplit("|", 1)[1].strip()
            for line in result.stderr.splitlines()
            if line.startswith("import time:") and "|" in line
        ]
        assert "glassformer.cli" in imported  # the listing is of this command's imports
        assert [m for m in imported if m.split(".")[0] == "torch"] == [], flag
