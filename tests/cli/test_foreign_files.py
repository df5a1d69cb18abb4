"""Files that came from elsewhere, met through the command line: every JSON or TOML document
glassformer reads nested 100,000 levels deep, a tokenizer file whose split pattern is hostile,
a data file that is not UTF-8. Each is refused in one line (exit 2) or, where the file is only
a hint (a lock, a metrics line, the best-checkpoint record), passed over; never a traceback,
never a hang.
"""

from __future__ import annotations

import json
import multiprocessing
import shutil
import time
from pathlib import Path

import pytest

from glassformer.models.config import ModelConfig
from glassformer.training.layout import best_or_latest

DEPTH = 100_000
DEEP_JSON = "[" * DEPTH + "]" * DEPTH
DEEP = "nests lists or objects too deeply: allowed at most 64 levels"
BOUND_S = 60.0  # a generous bound that only a hang exceeds


@pytest.fixture(scope="module")
def bpe_run(tmp_path_factory, cli) -> Path:
    """A tiny byte-level BPE language model, trained for 2 steps (made once; cases copy it)."""
    root = tmp_path_factory.mktemp("foreign")
    (root / "text.txt").write_text("the cat sat on the mat.\n" * 60, encoding="utf-8")
    out = root / "run"
    result = cli.run(
        "train", "--data", root / "text.txt", "--tokenizer", "bpe", "--vocab-size", "270",
        "--steps", "2", "--out", out, *cli.TINY, "--set", "train.eval_every=2",
        "--set", "sample.max_new_tokens=2",
    )  # fmt: skip
    assert result.code == 0, result.err
    return out


def copy_run(bpe_run: Path, tmp_path: Path) -> tuple[Path, Path]:
    """(a copy of the run folder, its checkpoint)."""
    run = tmp_path / "run"
    shutil.copytree(bpe_run, run)
    (step,) = sorted((run / "checkpoints").iterdir())
    return run, step


# ---- deeply nested JSON and TOML: one line, exit 2 --------------------------------------------


def _config_toml(run: Path, step: Path, tmp: Path) -> list[str | Path]:
    (tmp / "deep.toml").write_text("[train]\nlr = " + DEEP_JSON + "\n", encoding="utf-8")
    return ["train", "--config", tmp / "deep.toml", "--data", "reverse"]


def _set_value(run: Path, step: Path, tmp: Path) -> list[str | Path]:
    return ["train", "--data", "reverse", "--set", "train.lr=" + DEEP_JSON]


def _set_json_value(run: Path, step: Path, tmp: Path) -> list[str | Path]:
    deep_object = '{"a":' * DEPTH + "1" + "}" * DEPTH
    return ["train", "--data", "reverse", "--set", "train.lr=" + deep_object]


def _config_json(run: Path, step: Path, tmp: Path) -> list[str | Path]:
    (step / "config.json").write_text(DEEP_JSON, encoding="utf-8")
    return ["generate", "--checkpoint", step, "--prompt", "the"]


def _explore_config_json(run: Path, step: Path, tmp: Path) -> list[str | Path]:
    (step / "config.json").write_text(DEEP_JSON, encoding="utf-8")
    return ["explore", "--checkpoint", step, "--text", "the", "--export", tmp / "page.html"]


def _tokenizer_json(run: Path, step: Path, tmp: Path) -> list[str | Path]:
    (step / "tokenizer.json").write_text(DEEP_JSON, encoding="utf-8")
    return ["generate", "--checkpoint", step, "--prompt", "the"]


def _tokenizer_merges(run: Path, step: Path, tmp: Path) -> list[str | Path]:
    data = json.loads((step / "tokenizer.json").read_text(encoding="utf-8"))
    text = json.dumps(data).replace('"merges": [', '"merges": [' + DEEP_JSON + ", ")
    (step / "tokenizer.json").write_text(text, encoding="utf-8")
    return ["generate", "--checkpoint", step, "--prompt", "the"]


def _run_json(run: Path, step: Path, tmp: Path) -> list[str | Path]:
    (run / "run.json").write_text('{"format": "glassformer-run", "x": ' + DEEP_JSON + "}")
    return ["train", "--out", run, "--resume", "--steps", "3"]


def _trainer_json(run: Path, step: Path, tmp: Path) -> list[str | Path]:
    (step / "trainer.json").write_text(DEEP_JSON, encoding="utf-8")
    return ["train", "--out", run, "--resume", "--steps", "3"]


REFUSED = {
    "--config deep.toml": (_config_toml, "--config", DEEP),
    "--set train.lr=[[[...": (_set_value, "--set train.lr", DEEP),
    "--set train.lr={...": (_set_json_value, "--set train.lr", DEEP),
    "config.json": (_config_json, "config.json", DEEP),
    "config.json (explore)": (_explore_config_json, "config.json", DEEP),
    "tokenizer.json": (_tokenizer_json, "tokenizer.json", DEEP),
    "tokenizer.json merges": (_tokenizer_merges, "tokenizer.json", DEEP),
    "run.json": (_run_json, "run.json", DEEP),
    "trainer.json (--resume)": (_trainer_json, "trainer.json", DEEP),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_deeply_nested_document_is_refused_in_one_line(
    case: str, bpe_run: Path, tmp_path: Path, cli
) -> None:
    make, names, message = REFUSED[case]
    run, step = copy_run(bpe_run, tmp_path)
    result = cli.run(*make(run, step, tmp_path))
    cli.assert_user_error(result, names, message)


# ---- deeply nested hints: passed over ------------------------------------------------------------


def test_a_deeply_nested_lock_is_replaced_as_unreadable(bpe_run: Path, tmp_path: Path, cli):
    run, _ = copy_run(bpe_run, tmp_path)
    (run / ".lock").write_text(DEEP_JSON, encoding="utf-8")
    result = cli.run("train", "--out", run, "--resume", "--steps", "3")
    assert result.code == 0, result.err
    assert f"an unreadable lock {run / '.lock'} (" in result.err and DEEP in result.err
    assert cli.metrics(run)[-1]["step"] == 3 and not (run / ".lock").exists()


def test_a_deeply_nested_metrics_line_is_passed_over(bpe_run: Path, tmp_path: Path, cli):
    run, _ = copy_run(bpe_run, tmp_path)
    with (run / "metrics.jsonl").open("a", encoding="utf-8") as f:
        f.write(DEEP_JSON + "\n")
    result = cli.run("train", "--out", run, "--resume", "--steps", "3")
    assert result.code == 0, result.err
    lines = (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    assert DEEP_JSON not in lines and json.loads(lines[-1])["step"] == 3
    from glassformer.runs.curves import read_metrics

    (run / "metrics.jsonl").write_text(DEEP_JSON + "\n" + lines[-1] + "\n", encoding="utf-8")
    assert [r["step"] for r in read_metrics(run)] == [3]


def test_a_deeply_nested_best_record_falls_back_to_the_latest_checkpoint(bpe_run, tmp_path):
    run, step = copy_run(bpe_run, tmp_path)
    (step / "trainer.json").write_text(DEEP_JSON, encoding="utf-8")
    assert best_or_latest(run) == step
    from glassformer.runs.evaluation import _train_config

    assert _train_config(step) == {}  # eval then uses its defaults


# ---- deeply nested files met through the Python API ---------------------------------------------


def test_python_readers_refuse_deep_documents_with_a_valueerror(bpe_run, tmp_path) -> None:
    from glassformer.interop.huggingface import from_huggingface_dir
    from glassformer.tokenizers import BPETokenizer

    (tmp_path / "config.json").write_text(DEEP_JSON, encoding="utf-8")
    with pytest.raises(ValueError, match=f"config.json \\(a model config\\) {DEEP}"):
        ModelConfig.from_json_file(tmp_path / "config.json")
    with pytest.raises(ValueError, match=f"config.json {DEEP}"):
        from_huggingface_dir(tmp_path)
    (tmp_path / "vocab.json").write_text(DEEP_JSON, encoding="utf-8")
    (tmp_path / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    with pytest.raises(ValueError, match=f"vocab_json '.*vocab.json' {DEEP}"):
        BPETokenizer.from_gpt2_files(tmp_path / "vocab.json", tmp_path / "merges.txt")


# ---- a hostile split pattern in a checkpoint's tokenizer.json ---------------------------------


def _with_pattern(step: Path, pattern: str) -> None:
    data = json.loads((step / "tokenizer.json").read_text(encoding="utf-8"))
    data["pattern_name"], data["pattern"] = None, pattern
    (step / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")


def _run_in_child(conn, run, argv) -> None:
    result = run(*argv)
    conn.send((result.code, result.err))


def test_generate_with_a_backtracking_pattern_ends_with_one_line(
    bpe_run: Path, tmp_path: Path, cli, monkeypatch
) -> None:
    from glassformer.tokenizers import bpe_patterns

    monkeypatch.setattr(bpe_patterns, "PATTERN_SECONDS", 0.3, raising=False)
    _, step = copy_run(bpe_run, tmp_path)
    _with_pattern(step, r"(?:q|q)+$|(?s:.)")  # passes the probe text; backtracks on q...q!
    argv = ["generate", "--checkpoint", str(step), "--prompt", "q" * 60 + "!"]
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_run_in_child, args=(child, cli.run, argv))
    start = time.monotonic()
    proc.start()
    try:
        assert parent.poll(BOUND_S), f"generate still running after {BOUND_S:g} s (a hang)"
        code, err = parent.recv()
    finally:
        proc.kill()
        proc.join()
    assert time.monotonic() - start < BOUND_S
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("glassformer: error: the tokenizer's pattern took longer than 0.3 s")


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        (r"(\w+)|\W", "has 1 capturing group(s): allowed none"),
        (r"(\w)(\w*)|\W", "has 2 capturing group(s): allowed none"),
        (r"\w+|[ ]", "does not give back a probe text from its pieces"),
    ],
)
def test_generate_with_a_bad_pattern_is_refused_at_load(
    bpe_run: Path, tmp_path: Path, cli, pattern: str, message: str
) -> None:
    _, step = copy_run(bpe_run, tmp_path)
    _with_pattern(step, pattern)
    result = cli.run("generate", "--checkpoint", step, "--prompt", "the cat")
    cli.assert_user_error(result, message)


# ---- a data file that is not UTF-8 ---------------------------------------------------------------


def test_train_on_a_utf16_file_is_refused_naming_the_encoding(tmp_path: Path, cli) -> None:
    data = tmp_path / "reviews.csv"
    data.write_bytes("label,text\npos,good\nneg,bad\n".encode("utf-16-le"))
    result = cli.run("train", "--data", data, "--steps", "1", "--out", tmp_path / "run")
    cli.assert_user_error(
        result, f"file {str(data)!r}, line 1", "looks like UTF-16 (little-endian)", "iconv"
    )
    assert not (tmp_path / "run").exists()
    nuls = tmp_path / "nuls.txt"
    nuls.write_bytes(b"\x00" * 1000)
    result = cli.run("train", "--data", nuls, "--steps", "1", "--out", tmp_path / "run")
    cli.assert_user_error(result, "a NUL byte (0x00) at byte offset 0", "binary data")
