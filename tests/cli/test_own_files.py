"""``glassformer train`` on users' own files with the defaults: over-long texts truncated and
counted, a validation part held out of the file (and read again by ``eval``), header rows,
and files that are refused in one line naming the file."""

from __future__ import annotations

import json

import pytest

from glassformer import load_model
from glassformer.cli import build_parser
from glassformer.cli.train import gather_settings
from glassformer.runs.datasets import load_split, load_splits
from glassformer.runs.plan import make_plan
from glassformer.runs.record import read_run

from .conftest import LM_TEXT

WORDS = ["free", "prize", "call", "now", "ok", "see", "you", "later", "thanks", "love"]


def sms_rows(n: int) -> list[tuple[str, str]]:
    """(label, text) like SMS messages: rows 0, 8, 16, ... and 19 are longer than max_len 16
    (TINY)."""
    rows = []
    for i in range(n):
        words = [WORDS[(i * 3 + k) % len(WORDS)] for k in range(9 if i % 8 == 0 or i == 19 else 2)]
        rows.append(("spam" if i % 3 == 0 else "ham", " ".join(words)))
    return rows


def plan_of(*argv):
    return make_plan(gather_settings(build_parser().parse_args(["train", *map(str, argv)]))[0])


def test_a_classifier_on_messages_longer_than_max_len_trains_with_the_defaults(cli, tmp_path):
    rows = sms_rows(40)
    data = tmp_path / "sms.tsv"
    data.write_text("".join(f"{label}\t{text}\n" for label, text in rows))
    out = tmp_path / "run"
    result = cli.run("train", "--task", "classify", "--data", data, "--out", out, "--steps", "2",
                     *cli.TINY)  # fmt: skip
    assert result.code == 0, result.err
    # validation: rows 10, 20, 30, 40; a text is too long when it has more than 16 - 2 chars
    val = {9, 19, 29, 39}
    long = {i for i, (_, text) in enumerate(rows) if len(text) + 2 > 16}
    assert (len(long - val), len(long & val)) == (5, 1)
    assert "classify on sms.tsv: 36 training examples, 4 validation examples;" in result.out
    assert "\nvalidation: 10% of the rows of sms.tsv, spread evenly (4 rows)\n" in result.out
    assert (
        "\n5 of 36 training and 1 of 4 validation texts longer than max_len 16 were truncated "
        "(data.overflow)\n"
    ) in result.out
    assert [r["step"] for r in cli.metrics(out) if "val_loss" in r] == [2]
    model = load_model(out / "checkpoints" / "step-000002")
    assert model.config.extra["labels"] == ["ham", "spam"]


def test_a_data_error_names_the_file_and_the_line(cli, tmp_path):
    data = tmp_path / "sms.tsv"
    data.write_text("label\ttext\n" + "".join(f"{a}\t{b}\n" for a, b in sms_rows(40)))
    out = tmp_path / "run"
    result = cli.run("train", "--task", "classify", "--data", data, "--out", out,
                     "--set", "data.overflow=error", *cli.TINY)  # fmt: skip
    # row 0 (line 2) is the first long text: 43 characters, 45 tokens with <BOS> and <EOS>
    cli.assert_user_error(
        result,
        f"file {str(data)!r}, line 2: the text has 45 tokens counting <BOS>/<EOS>, more than "
        "max_len=16",
        "in a run --set data.overflow=truncate)",
    )
    assert not out.exists()


def test_a_text_file_holds_out_its_last_tenth_and_eval_reads_it(cli, tmp_path):
    data = tmp_path / "notes.txt"
    data.write_text(LM_TEXT)  # 1,440 characters: 144 held out
    out = tmp_path / "run"
    result = cli.run("train", "--data", data, "--out", out, "--steps", "2", *cli.TINY,
                     "--set", "sample.max_new_tokens=0")  # fmt: skip
    assert result.code == 0, result.err
    assert "\nvalidation: the last 10% of notes.txt (144 characters)\n" in result.out
    assert "lm on notes.txt: 1 training text, 1 validation text;" in result.out
    run = json.loads((out / "run.json").read_text())
    assert (run["data"], run["validation"]) == (str(data), str(data))
    assert run["data_options"] == {"val_fraction": 0.1}
    (logged,) = [r for r in cli.metrics(out) if "val_loss" in r]
    # --resume and eval read the plan in run.json: the same two parts
    train, validation = load_splits(read_run(out)[0])
    assert (train.examples[0], validation.examples[0]) == (LM_TEXT[:1296], LM_TEXT[1296:])
    # eval of the run: the 10 windows of 16 tokens of the held-out 144 characters (+ <BOS>,
    # <EOS>), not the 91 of the whole file; the trainer scored them in batches of 8 and 2
    result = cli.run("eval", "--checkpoint", out, "--json", tmp_path / "all.json")
    assert result.code == 0, result.err
    assert json.loads((tmp_path / "all.json").read_text())["examples"] == 10
    result = cli.run("eval", "--checkpoint", out, "--batch-size", "8",
                     "--json", tmp_path / "first.json")  # fmt: skip
    report = json.loads((tmp_path / "first.json").read_text())
    assert report["metrics"]["loss"] == pytest.approx(logged["val_loss"], rel=1e-6)


def test_the_validation_choices_of_a_file(tmp_path):
    data = tmp_path / "notes.txt"
    data.write_text(LM_TEXT)
    plan = plan_of("--data", data)
    assert plan.validation == str(data) and plan.data_options == {"val_fraction": 0.1}
    plan = plan_of("--data", data, "--val-data", "none")
    assert plan.validation is None and plan.data_options == {}
    plan = plan_of("--data", data, "--set", "data.val_fraction=0.25")
    assert plan.validation == str(data) and plan.data_options == {"val_fraction": 0.25}
    plan = plan_of("--data", data, "--val-data", data)
    assert plan.validation == str(data) and plan.data_options == {}  # the whole file
    assert plan_of("--data", "reverse").data_options == {}


def test_a_header_row_text_label_trains_the_right_classes(cli, tmp_path):
    data = tmp_path / "reviews.csv"
    rows = [
        ("a good film" if i % 2 else "a bad film", "pos" if i % 2 else "neg") for i in range(30)
    ]
    data.write_text("text,label\n" + "".join(f"{t},{lab}\n" for t, lab in rows))
    out = tmp_path / "run"
    result = cli.run("train", "--data", data, "--out", out, "--steps", "1", *cli.TINY)
    assert result.code == 0, result.err
    assert "classify on reviews.csv: 27 training examples, 3 validation examples;" in result.out
    model = load_model(out / "checkpoints" / "step-000001")
    assert (model.config.n_classes, model.config.extra["labels"]) == (2, ["neg", "pos"])


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        (
            "swapped.csv",
            "".join(f"review number {i},{'pos' if i % 2 else 'neg'}\n" for i in range(301)),
            ["swapped.csv", "the label column has 301 distinct values in 301 rows",
             "is the first column the text?"],
        ),
        ("data.json", '{"text": "hello"}\n', ["data.json", ".json file is not plain text"]),
        ("data.json.gz", "x", ["data.json.gz", ".json file is not plain text"]),
        ("data.csv.gz", "x", ["data.csv.gz", "not gzip data", "allowed a whole gzip file"]),
        (
            "tiny.txt",
            "hello",
            ["tiny.txt", "5 characters are too few to hold out", "--val-data none"],
        ),
    ],
)  # fmt: skip
def test_files_refused_in_one_line_naming_the_file(cli, tmp_path, name, content, words):
    (tmp_path / name).write_text(content)
    out = tmp_path / "run"
    result = cli.run("train", "--data", tmp_path / name, "--out", out, *cli.TINY)
    cli.assert_user_error(result, *words)
    assert not out.exists()


def test_val_fraction_with_a_validation_file_is_refused(cli, tmp_path):
    (tmp_path / "a.txt").write_text(LM_TEXT)
    result = cli.run("train", "--data", tmp_path / "a.txt", "--val-data", tmp_path / "a.txt",
                     "--set", "data.val_fraction=0.2")  # fmt: skip
    cli.assert_user_error(result, "data.val_fraction=0.2 holds out part of --data", "--val-data")


def test_seq2seq_and_classification_data_are_truncated_by_default(tmp_path):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("ab\tba\ncd\tdc\n")
    assert load_split(str(pairs), "train", "seq2seq", {}).overflow == "truncate"
    assert load_split(str(pairs), "train", "classify", {}).overflow == "truncate"
    assert load_split(str(pairs), "train", "seq2seq", {"overflow": "drop"}).overflow == "drop"
    assert load_split("reverse", "train", "seq2seq", {"num_examples": 2}).overflow == "truncate"
    assert load_split(str(pairs), "train", "lm", {}).overflow == "error"  # windows, not cut
