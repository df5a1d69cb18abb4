"""``glassformer predict``: prints what ``classify`` and ``fill_mask`` return."""

from __future__ import annotations

import json

import pytest

from glassformer import load_model
from glassformer.predict import classify, fill_mask

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


def test_a_text_longer_than_max_len_is_refused_naming_what_to_type(cli, task_runs, tmp_path):
    """The command line names its own remedy (shorten it, or --truncate), not the Python
    keyword; --truncate gives what classify(..., truncate=True) gives."""
    ckpt = task_runs["classify"] / "checkpoints" / "step-000020"
    model = load_model(ckpt)
    long = "abcd" * 8  # <BOS> + 32 + <EOS>: 34 tokens, max_len 16
    result = cli.run("predict", "--checkpoint", ckpt, "--text", "abc", long)
    cli.assert_user_error(
        result,
        "text 2 of --text has 34 tokens but the checkpoint's max_len is 16: shorten it, or add "
        "--truncate to cut it to 16 tokens",
    )
    (tmp_path / "in.txt").write_text(f"abc\n\n{long}\n")
    result = cli.run("predict", "--checkpoint", ckpt, "--file", tmp_path / "in.txt")
    cli.assert_user_error(result, f"line 3 of {tmp_path / 'in.txt'} has 34 tokens")
    cut = cli.run("predict", "--checkpoint", ckpt, "--text", long, "--truncate", "--json")
    assert cut.code == 0, cut.err
    (expected,) = classify(model, long, tokenizer=model.tokenizer, truncate=True)
    row = json.loads(cut.out)
    assert (row["label"], row["probability"]) == (expected.label, expected.probability)
    with pytest.raises(ValueError, match="the text has 34 tokens .* or pass truncate=True"):
        classify(model, long, tokenizer=model.tokenizer)

    mlm = task_runs["mlm"] / "checkpoints" / "step-000020"
    masked = "the cat sat on the <MASK>at"
    result = cli.run("predict", "--checkpoint", mlm, "--text", masked)
    cli.assert_user_error(result, "--text has 24 tokens but the checkpoint's max_len is 16: "
                          "shorten it (a masked LM reads the whole text)")  # fmt: skip
    assert "truncate" not in result.err
    result = cli.run("predict", "--checkpoint", mlm, "--text", masked, "--truncate")
    cli.assert_user_error(result, "--truncate is for classifier checkpoints")
    model = load_model(mlm)
    with pytest.raises(ValueError, match="shorten it \\(a masked LM reads the whole text\\)$"):
        fill_mask(model, model.tokenizer, masked)


def test_an_empty_text_is_refused_by_predict_and_the_explorer_alike(cli, task_runs):
    """One rule: a text with nothing but whitespace is not a text to classify or look at."""
    from glassformer.explore import explore_data

    ckpt = task_runs["classify"] / "checkpoints" / "step-000020"
    result = cli.run("predict", "--checkpoint", ckpt, "--text", "")
    cli.assert_user_error(result, "--text is empty: give the model some text to read")
    result = cli.run("predict", "--checkpoint", ckpt, "--text", "abc", "  ")
    cli.assert_user_error(result, "text 2 of --text is empty (only whitespace): give the model")
    model = load_model(ckpt)
    for run in (
        lambda text: classify(model, text, tokenizer=model.tokenizer),
        lambda text: explore_data(model, text),
    ):
        with pytest.raises(ValueError, match="^the text is empty: give the model some text"):
            run("")
        with pytest.raises(ValueError, match="^the text is empty \\(only whitespace\\): give"):
            run("\n")
    with pytest.raises(ValueError, match="^inputs\\[1\\] is empty: give the model"):
        classify(model, ["abc", ""], tokenizer=model.tokenizer)
