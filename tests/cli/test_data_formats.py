"""``glassformer train`` on a JSON Lines file and on a folder of .txt files, end to end; bad
records are one line naming the file and the record, exit status 2."""

from __future__ import annotations

import json

from glassformer import load_model

from .conftest import LM_TEXT


def test_a_classifier_trains_on_json_lines(cli, tmp_path):
    data = tmp_path / "reviews.jsonl"
    rows = [{"label": "pos" if i % 2 else "neg", "text": f"film {i} was ok"} for i in range(30)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "run"
    result = cli.run("train", "--data", data, "--out", out, "--steps", "2", *cli.TINY)
    assert result.code == 0, result.err
    assert "classify on reviews.jsonl: 27 training examples, 3 validation examples;" in result.out
    assert "\nvalidation: 10% of the rows of reviews.jsonl, spread evenly (3 rows)\n" in result.out
    model = load_model(out / "checkpoints" / "step-000002")
    assert model.config.extra["labels"] == ["neg", "pos"]


def test_a_language_model_trains_on_a_folder_of_texts_and_resume_sees_a_change(cli, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(10):
        (folder / f"{i}.txt").write_text(LM_TEXT[i * 100 : i * 100 + 300])
    out = tmp_path / "run"
    result = cli.run("train", "--data", folder, "--out", out, "--steps", "2", *cli.TINY,
                     "--set", "sample.max_new_tokens=4")  # fmt: skip
    assert result.code == 0, result.err
    assert "lm on notes: 9 training texts, 1 validation text;" in result.out
    assert "\nvalidation: 10% of the files of notes, spread evenly (1 files)\n" in result.out
    (folder / "3.txt").write_text("the mat sat on the cat.")
    again = cli.run("train", "--out", out, "--resume", "--steps", "3")
    cli.assert_user_error(again, f"the training folder {folder} changed since the run last read")


def test_a_record_of_the_wrong_type_is_one_line(cli, tmp_path):
    data = tmp_path / "docs.jsonl"
    data.write_text('{"text": "a cat"}\n{"text": 7}\n')
    out = tmp_path / "run"
    result = cli.run("train", "--data", data, "--out", out, *cli.TINY)
    cli.assert_user_error(
        result,
        f"file {str(data)!r}, line 2: the text field 'text' is a number (7): allowed a string",
    )
    assert not out.exists()
    named = cli.run("train", "--data", data, "--set", "data.text_field=body", "--out", out)
    cli.assert_user_error(named, "its fields ['text'] are no task's")
