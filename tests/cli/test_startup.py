"""``glassformer --help``, every command's ``--help`` and the refusal of a bad option (argparse's
errors) load no PyTorch at all, nor does ``glassformer --version``; other user errors import
nothing heavy (torch.distributed.checkpoint, transformers, matplotlib, tensorboard) that
``import torch`` alone does not already load."""

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


# In a fresh interpreter: each command line's exit status, its stderr, and the torch modules
# loaded so far.
LIGHT_PROBE = """
import contextlib, io, json, sys
from glassformer.cli import main

seen = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit:
            code = exit.code
    torch = sorted(m for m in sys.modules if m.split(".")[0] == "torch")
    seen.append([argv, code, err.getvalue(), torch])
print(json.dumps(seen))
"""
COMMANDS = ("train", "eval", "generate", "predict", "inspect", "trace", "explore", "config")
REFUSALS = {
    ("nosuch",): "argument COMMAND: invalid choice: 'nosuch' (choose from 'train', 'eval', "
    "'generate', 'predict', 'inspect', 'trace', 'explore', 'config') (see glassformer --help)",
    ("train", "--bogus"): "unrecognized arguments: --bogus (see glassformer --help)",
    ("train", "--steps"): "argument --steps: expected one argument (see glassformer train --help)",
    ("train", "--strategy", "zero"): "argument --strategy: invalid choice: 'zero' (choose from "
    "'ddp', 'fsdp') (see glassformer train --help)",
    ("generate", "--checkpoint", "x", "--num-beams", "999"): "argument --num-beams: 999 is too "
    "large: allowed 1 to 256 (see glassformer generate --help)",
    ("eval",): "the following arguments are required: --checkpoint (see glassformer eval --help)",
    ("config", "--model", "huge"): "argument --model: invalid choice: 'huge' (choose from "
    "'bert-base', 'gpt2', 'tiny', 'tiny-encoder', 'tiny-llama', 'tiny-seq2seq', 'vaswani-base') "
    "(see glassformer config --help)",
}


def test_help_and_refused_options_load_no_torch(tmp_path):
    """Every ``--help`` and every refusal by the parser (unknown option or command, a bad
    choice or value, a missing value or option) answers with no torch module loaded: the
    parsers are built from modules that import nothing heavy (cli/*_args.py)."""
    commands = [["--help"], *([c, "--help"] for c in COMMANDS), *map(list, REFUSALS)]
    src = str(Path(glassformer.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-c", LIGHT_PROBE, json.dumps(commands)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    seen = {tuple(argv): (code, err, torch) for argv, code, err, torch in json.loads(result.stdout)}
    assert seen == {
        **{tuple(argv): (0, "", []) for argv in commands[: 1 + len(COMMANDS)]},
        **{argv: (2, f"glassformer: error: {line}\n", []) for argv, line in REFUSALS.items()},
    }

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
