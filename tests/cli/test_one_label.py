"""A file whose examples all carry one label: ``eval`` scores it (evaluating on one class is
legitimate), ``train`` refuses it in one line (a classifier needs two classes to learn)."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

from glassformer import load_model
from glassformer.data import load_dataset


def test_eval_scores_a_file_of_one_label(cli, task_runs, tmp_path):
    ckpt = sorted((task_runs["classify"] / "checkpoints").iterdir())[-1]
    model = load_model(ckpt).eval()
    data = load_dataset("is_sorted", "validation", num_examples=40, max_length=6)
    rows = [(label, text) for label, text in data.examples if label == "sorted"]
    path = tmp_path / "sorted.csv"
    path.write_text("label,text\n" + "".join(f"{a},{b}\n" for a, b in rows))
    result = cli.run("eval", "--checkpoint", ckpt, "--data", path, "--json", tmp_path / "m.json")
    assert result.code == 0, result.err
    report = json.loads((tmp_path / "m.json").read_text())
    assert report["examples"] == len(rows) == 20
    tok, index = model.tokenizer, model.config.extra["labels"].index("sorted")
    assert index == 1  # the model's second class: the file's only label is not class 0
    with torch.no_grad():
        logits = torch.cat([
            model(torch.tensor([[tok.bos_id, *tok.encode(text), tok.eos_id]])).logits
            for _, text in rows
        ])  # fmt: skip
    target = torch.full((len(rows),), index)
    assert report["metrics"]["loss"] == pytest.approx(float(F.cross_entropy(logits, target)))
    right = float((logits.argmax(-1) == target).float().mean())
    assert report["metrics"]["accuracy"] == pytest.approx(right)


def test_train_refuses_a_file_of_one_label(cli, tmp_path):
    path = tmp_path / "spam.csv"
    path.write_text("text,label\n" + "".join(f"win a prize {i},spam\n" for i in range(30)))
    out = tmp_path / "run"
    result = cli.run("train", "--task", "classify", "--data", path, "--out", out, *cli.TINY)
    cli.assert_user_error(result)
    assert result.err == (
        f"glassformer: error: file {str(path)!r}, line 2: every example has the label 'spam': "
        "allowed at least 2 distinct labels to train a classifier\n"
    )
    assert not out.exists()
