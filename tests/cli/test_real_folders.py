"""Real pretrained folders as they ship (tests/real_models.py), each fine-tuned for a step or two
by ``train --init-from`` and then read by every command:

- all-MiniLM-L6-v2, a WordPiece BERT body whose ``tokenizer.json`` sets padding (fixed, 128)
  and truncation (128): a classifier, read by ``eval``, ``predict``, ``inspect``, ``trace`` and
  the explorer; a text of more than 128 word pieces keeps every one.
- SmolLM2-135M-Instruct, a byte-level BPE Llama with no mask token (its tokenizer's <MASK>
  role is an id past the model's 49,152 rows): a language model (LoRA, one step), read by
  ``generate``, ``eval``, ``inspect``, ``trace`` and the explorer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from tokenizers import Tokenizer

from glassformer import load_model
from glassformer.explore.server import HEADER, create_app

ROWS = "label,text\n" + "".join(
    f"pos,a fair and sunny day {i}\n" if i % 2 else f"neg,a foul and stormy night {i}\n"
    for i in range(24)
)
LONG = " ".join(f"word{i}" for i in range(90))  # 201 word pieces
FRANCE = "The capital of France is"
pytestmark = pytest.mark.slow  # fine-tunes and reads models of 22M and 135M parameters


def run_page(model, text: str) -> dict:
    """The explorer's answer to ``text``, from its app without a server."""
    app = create_app(model, name="real", text=text)
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        got = client.post("/api/run", json={"text": text}, headers={HEADER: "1"})
    assert got.status_code == 200, got.text
    return got.json()


# ---- all-MiniLM-L6-v2 ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def minilm(cli, minilm_folder, tmp_path_factory) -> tuple[Path, Path, str]:
    """(the classifier's run folder, its data, train's output)."""
    root = tmp_path_factory.mktemp("minilm")
    rows = root / "rows.csv"
    rows.write_text(ROWS, encoding="utf-8")
    out = root / "run"
    result = cli.run("train", "--data", rows, "--init-from", minilm_folder, "--out", out,
                     "--steps", "2", "--set", "train.batch_size=4", "--set",
                     "train.eval_batches=1")  # fmt: skip
    assert result.code == 0, result.err
    return out, rows, result.out


def test_minilm_fine_tunes_into_a_classifier(minilm, minilm_folder):
    printed = minilm[2]
    start = next(line for line in printed.splitlines() if line.startswith("init from"))
    assert start.startswith(f"init from {minilm_folder.resolve()}: 22.")
    assert "parameters from it; new: classifier 384 -> 2" in start
    assert "pretrained tokenizer (30522 tokens)" in printed


def test_minilm_keeps_a_text_longer_than_the_files_truncation(minilm, minilm_folder):
    """The file cuts at 128 and pads to 128; the model's tokenizer does neither."""
    ref = Tokenizer.from_file(str(minilm_folder / "tokenizer.json"))
    assert ref.truncation["max_length"] == 128 and ref.padding["length"] == 128
    ref.no_truncation()
    ref.no_padding()
    want = ref.encode(LONG, add_special_tokens=False).ids
    assert len(want) == 201
    tok = load_model(minilm[0]).tokenizer
    assert tok.encode(LONG) == want
    assert tok.encode("a fair day") == [1037, 4189, 2154]


def test_minilm_eval_and_predict(cli, minilm, tmp_path):
    out, rows, _ = minilm
    report = tmp_path / "eval.json"
    evaluated = cli.run("eval", "--checkpoint", out, "--data", rows, "--json", report)
    assert evaluated.code == 0, evaluated.err
    metrics = json.loads(report.read_text())["metrics"]
    assert 0.0 <= metrics["accuracy"] <= 1.0 and metrics["loss"] > 0
    predicted = cli.run("predict", "--checkpoint", out, "--text", "a fair and sunny day", LONG,
                        "--json")  # fmt: skip
    assert predicted.code == 0, predicted.err
    answers = [json.loads(line) for line in predicted.out.splitlines()]
    assert [a["label"] in ("neg", "pos") for a in answers] == [True, True]


def test_minilm_inspect_trace_and_explore(cli, minilm, tmp_path):
    out = minilm[0]
    n = len(load_model(out).tokenizer.encode(LONG)) + 2  # [CLS] ... [SEP]
    traced = cli.run("trace", "--checkpoint", out, "--text", LONG, "--layer", "0")
    assert traced.code == 0, traced.err
    assert f"(1, {n}, 384)" in traced.out
    assert "class: p = softmax(logits[0]) = " in traced.out
    pictures = tmp_path / "pictures"
    inspected = cli.run("inspect", "--checkpoint", out, "--text", "a fair day", "--out",
                        pictures, "--layers", "0", "--heads", "0")  # fmt: skip
    assert inspected.code == 0, inspected.err
    assert any(p.suffix == ".png" for p in pictures.iterdir())
    data = run_page(load_model(out), "a fair day")
    assert data["predictions"]["kind"] == "class"
    assert data["predictions"]["labels"] == ["neg", "pos"]
    assert sum(data["predictions"]["probs"]) == pytest.approx(1.0, abs=1e-5)


# ---- SmolLM2-135M-Instruct -------------------------------------------------------------------
@pytest.fixture(scope="module")
def smollm2(cli, smollm2_folder, tmp_path_factory) -> tuple[Path, Path, str]:
    """(the language model's run folder, its text, train's output): one LoRA step."""
    root = tmp_path_factory.mktemp("smollm2")
    text = root / "text.txt"
    text.write_text("The capital of France is Paris. The capital of Italy is Rome.\n" * 6)
    out = root / "run"
    result = cli.run("train", "--data", text, "--init-from", smollm2_folder, "--out", out,
                     "--steps", "1", "--set", "train.batch_size=2", "--set", "train.context=16",
                     "--set", "train.lora_rank=2", "--set", "train.eval_batches=1",
                     "--set", "sample.max_new_tokens=0")  # fmt: skip
    assert result.code == 0, result.err
    return out, text, result.out


def test_smollm2_fine_tunes_though_its_tokenizer_has_no_mask(smollm2, smollm2_folder):
    out, printed = smollm2[0], smollm2[2]
    start = next(line for line in printed.splitlines() if line.startswith("init from"))
    assert start.startswith(f"init from {smollm2_folder.resolve()}: 134.52M parameters from it")
    assert "pretrained tokenizer (49152 tokens)" in printed  # its ids; <MASK> has no row
    model = load_model(out)
    assert model.config.vocab_size == model.tokenizer.file_vocab_size == 49152
    assert model.tokenizer.mask_id == 49152
    with pytest.raises(ValueError, match=r"holds '<MASK>' \(id 49152\), a token the model has"):
        model.to_tokens("<MASK>")


def test_smollm2_generate_and_eval(cli, smollm2, tmp_path):
    out, text, _ = smollm2
    result = cli.run("generate", "--checkpoint", out, "--prompt", FRANCE, "--max-new-tokens",
                     "2", "--temperature", "0")  # fmt: skip
    assert result.code == 0, result.err
    assert result.out == f"{FRANCE} Paris.\n"
    report = tmp_path / "eval.json"
    evaluated = cli.run("eval", "--checkpoint", out, "--data", text, "--json", report)
    assert evaluated.code == 0, evaluated.err
    assert 0 < json.loads(report.read_text())["metrics"]["loss"] < 5


def test_smollm2_inspect_trace_and_explore(cli, smollm2, tmp_path):
    out = smollm2[0]
    traced = cli.run("trace", "--checkpoint", out, "--text", FRANCE, "--layer", "0")
    assert traced.code == 0, traced.err
    assert "next token after the input: p = softmax(logits[0, -1]) = 'ĠParis'" in traced.out
    pictures = tmp_path / "pictures"
    inspected = cli.run("inspect", "--checkpoint", out, "--text", FRANCE, "--out", pictures,
                        "--layers", "0", "--heads", "0")  # fmt: skip
    assert inspected.code == 0, inspected.err
    assert any(p.suffix == ".png" for p in pictures.iterdir())
    data = run_page(load_model(out), FRANCE)
    assert data["predictions"]["top"][-1][0][0] == "ĠParis"
