"""The command line's words for what a library error names (cli/hints.py): the Python
argument a message opens with, and the settings and arguments it names, said as the flags
that give them; a library error itself names no flag (glassformer/named.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from glassformer.cli.hints import as_flags, with_flags
from glassformer.named import naming
from glassformer.runs import Run, RunError


@pytest.mark.parametrize(
    ("message", "argument", "names", "shown"),
    [
        (
            "init_from runs/x: not a model (no config.json)",
            "init_from",
            (),
            "--init-from runs/x: not a model (no config.json)",
        ),
        (
            "lower train.lr (it is 0.001; e.g. train.lr=0.0001)",
            None,
            ("train.lr",),
            "lower train.lr (it is 0.001; e.g. --set train.lr=0.0001)",
        ),
        (
            "train.steps=0 trains nothing; give train.steps=N with N >= 1",
            None,
            ("train.steps",),
            "--steps 0 trains nothing; give --steps N with N >= 1",
        ),
        (
            "continue it with Run.resume (a larger train.steps extends it), or choose another "
            "run.out",
            None,
            ("Run.resume", "train.steps", "run.out"),
            "continue it with --resume (a larger --steps extends it), or choose another --out",
        ),
        (
            "with Run.resume and data_changed_ok=True",
            None,
            ("Run.resume", "data_changed_ok"),
            "with --resume and --data-changed-ok",
        ),
        (  # a plain word is replaced only where assigned; a look-alike name is left alone
            "the run has no validation data; give data=FILE (not model.data=x)",
            None,
            ("data",),
            "the run has no validation data; give --data FILE (not model.data=x)",
        ),
        (
            "model tiny-encoder is a preset of the encoder family but run.task=lm needs "
            "the decoder family",
            "model",
            ("run.task",),
            "--model tiny-encoder is a preset of the encoder family but --task lm needs "
            "the decoder family",
        ),
        (
            "setting 'lr=1': the key needs a section",
            "setting",
            (),
            "--set 'lr=1': the key needs a section",
        ),
    ],
)
def test_a_message_is_said_with_the_flags(message, argument, names, shown):
    assert as_flags(message, argument, names) == shown
    assert with_flags(naming(ValueError(message), argument=argument, names=names)) == shown


def test_data_and_inspect_errors_are_said_with_the_flags(tmp_path):
    """The data's and the inspected inputs' errors, as the command line words them."""
    from glassformer.data import Seq2SeqDataset, load_dataset
    from glassformer.inspect.inputs import encode_inputs
    from glassformer.models import DecoderLM
    from glassformer.presets import preset
    from glassformer.tokenizers.char import CharTokenizer

    tok = CharTokenizer().train("abcdefgh")
    with pytest.raises(ValueError) as dropped:
        Seq2SeqDataset([("abcdef", "x"), ("ab", "abcdefgh")], tok, 4, overflow="drop")
    assert with_flags(dropped.value).endswith(
        "(in a run --set model.max_len=N or --set data.overflow=truncate)"
    )
    nine = tmp_path / "nine.tsv"
    nine.write_text("".join(f"s{i}\tt{i}\n" for i in range(9)))
    with pytest.raises(ValueError) as short:
        load_dataset(nine, task="seq2seq", val_fraction=0.1)
    assert with_flags(short.value).endswith(
        "(--val-data FILE, or --val-data none to train on the whole file)"
    )
    model = DecoderLM(preset("tiny", vocab_size=tok.vocab_size, max_len=8))
    model.tokenizer = tok
    with pytest.raises(ValueError) as padded:
        encode_inputs(model, "abc", None, pad_to=9)
    assert with_flags(padded.value) == (
        "--pad-to 9 is not allowed: between the input's 4 tokens and the model's max_len 8"
    )
    with pytest.raises(ValueError) as target:
        encode_inputs(model, "abc", "cba", None)
    assert with_flags(target.value) == "--target is for encoder-decoder checkpoints only"


def test_an_error_that_names_nothing_is_shown_as_it_is():
    assert with_flags(ValueError("model.d_model=7 must be divisible")) == (
        "model.d_model=7 must be divisible"
    )


def test_a_run_error_names_the_setting_and_the_command_line_the_flag(tmp_path):
    with pytest.raises(RunError) as caught:
        Run.plan(data=str(tmp_path / "none.txt"), out=tmp_path / "run", steps=0)
    assert str(caught.value).startswith(f"data {tmp_path / 'none.txt'}: the file does not")
    assert with_flags(caught.value).startswith(f"--data {tmp_path / 'none.txt'}: the file")


SRC = Path(__file__).resolve().parents[2] / "src" / "glassformer"
FLAG = re.compile(r"(^|[\s(])--[a-z]")


def _strings(path: Path):
    """The string constants of a module outside its docstrings, with their lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.lineno, node.value


def test_the_library_names_no_flag():
    """Every room of the library but cli/ (and examples/, scripts with command lines of their
    own) says arguments and settings; the flags are the command line's (a docstring may name
    them)."""
    rooms = sorted(
        p.name
        for p in SRC.iterdir()
        if p.is_dir() and p.name not in {"cli", "examples", "__pycache__"}
    )
    assert {"runs", "training", "models", "data", "inspect", "finetune", "nn"} <= set(rooms)
    found = [
        f"{path.relative_to(SRC)}:{line}: {text!r}"
        for room in rooms
        for path in sorted((SRC / room).rglob("*.py"))
        for line, text in _strings(path)
        if FLAG.search(text)
    ]
    assert not found, "\n".join(found)
