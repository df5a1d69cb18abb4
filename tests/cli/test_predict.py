"""``glassformer predict``: prints what ``classify`` and ``fill_mask`` return."""

from __future__ import annotations

import json

import pytest

from glassformer.generation import classify, fill_mask
from glassformer.models import load_model

TEXTS = ["abcd", "dcba", "aab"]


def test_classifier_label_and_probability_per_line(cli, task_runs, tmp_path):
    ckpt = task_runs["classify"] / "checkpoints" / "step-000020"
    model = load_model(ckpt)
    results = classify(model, TEXTS, tokenizer=model.tokenizer)
    result = cli.run("predict", "--checkpoint", ckpt, "--text", *TEXTS)
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        f"{r.label} {r.probability:.4f}\t{t}" for r, t in zip(results, TEXTS, strict=True)
    ]
    (tmp_path / "in.txt").write_text("\n".join([*TEXTS[:1], "", *TEXTS[1:]]) + "\n")
    from_file = cli.run("predict", "--checkpoint", ckpt, "--file", tmp_path / "in.txt")
    assert from_file.out == result.out

    as_json = cli.run("predict", "--checkpoint", ckpt, "--text", *TEXTS, "--json", "--top-k", "2")
    rows = [json.loads(line) for line in as_json.out.splitlines()]
    for row, r, text in zip(rows, results, TEXTS, strict=True):
        assert (row["text"], row["label"], row["probability"]) == (text, r.label, r.probability)
        assert [x["label"] for x in row["top"]] == sorted(
            r.probabilities, key=r.probabilities.get, reverse=True
        )
        assert sum(x["probability"] for x in row["top"]) == pytest.approx(1.0)


def test_fill_mask_candidates_per_mask(cli, task_runs):
    ckpt = task_runs["mlm"] / "checkpoints" / "step-000020"
    model = load_model(ckpt)
    texts = ["the c<MASK>t sat", "<MASK>he mat<MASK>"]
    expected = fill_mask(model, model.tokenizer, texts, top_k=3)
    result = cli.run("predict", "--checkpoint", ckpt, "--text", *texts, "--top-k", "3", "--json")
    assert result.code == 0, result.err
    rows = [json.loads(line) for line in result.out.splitlines()]
    assert [len(r["masks"]) for r in rows] == [1, 2]
    for row, predictions in zip(rows, expected, strict=True):
        for mask, p in zip(row["masks"], predictions, strict=True):
            assert mask["position"] == p.position
            assert [(c["token"], c["probability"]) for c in mask["candidates"]] == [
                (c.token, c.probability) for c in p.candidates
            ]
    plain = cli.run("predict", "--checkpoint", ckpt, "--text", texts[0], "--top-k", "2")
    c = expected[0][0].candidates
    assert plain.out == (
        f"{texts[0]}\t<MASK>1: {c[0].token!r} {c[0].probability:.4f} | "
        f"{c[1].token!r} {c[1].probability:.4f}\n"
    )
