"""``glassformer eval`` refuses data of another task in one short line, and writes nothing."""

from __future__ import annotations

import pytest

from glassformer.runs.evaldata import short_list

SENTINEL = b'{"metrics": "of an earlier evaluation"}\n'


def labelled(n: int, labels=("ham", "spam")) -> str:
    return "".join(f"{labels[i % len(labels)]},message number {i} for you\n" for i in range(n))


CASES = {
    "classification header for seq2seq": (
        "seq2seq", "reviews.csv", "label,text\npos,a good film\nneg,a bad film\n",
        ["reviews.csv", "'label,text'", "classification columns", "seq2seq model", "source,target"],
    ),
    "swapped classification header for seq2seq": (
        "seq2seq", "reviews.csv", "text,label\na good film,pos\n",
        ["'text,label'", "classification columns"],
    ),
    "labelled texts without a header for seq2seq": (
        "seq2seq", "sms.csv", labelled(60),
        ["sms.csv", "2 values over 60 rows", "['ham', 'spam']", "classification labels"],
    ),
    "classification header for lm": (
        "lm", "reviews.csv", "label,text\npos,the cat sat\n",
        ["classification columns", "language model", "plain text"],
    ),
    "seq2seq header for a classifier": (
        "classify", "pairs.tsv", "source\ttarget\nabc\tcba\n",
        ["pairs.tsv", "seq2seq columns", "classifier", "label,text"],
    ),
    "pairs without a header for a classifier": (
        "classify", "pairs.tsv", "".join(f"w{i % 30}\tx{i}\n" for i in range(300)),
        ["labels ['w0', 'w1', 'w10', ... 27 more]", "model's 2 classes", "'sorted'"],
    ),
    "a label column as varied as its rows": (
        "classify", "pairs.tsv", "".join(f"w{i}\tx{i}\n" for i in range(300)),
        ["pairs.tsv", "300 distinct values in 300 rows"],
    ),
    "text the tokenizer cannot read": (
        "seq2seq", "digits.tsv", "".join(f"{i}\t{str(i)[::-1]}\n" for i in range(100, 130)),
        ["digits.tsv", "(100%) are <UNK>"],
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_eval_refuses_data_of_another_task_and_keeps_eval_json(
    cli, lm_run, task_runs, tmp_path, case
):
    task, name, content, words = CASES[case]
    run_dir = lm_run[0] if task == "lm" else task_runs[task]
    (tmp_path / name).write_text(content)
    existing = run_dir / "eval.json"
    existing.write_bytes(SENTINEL)
    try:
        result = cli.run("eval", "--checkpoint", run_dir, "--data", tmp_path / name)
        cli.assert_user_error(result, *words)
        assert len(result.err.replace(str(tmp_path), "")) < 250, result.err
        assert existing.read_bytes() == SENTINEL
        assert sorted(p.name for p in run_dir.glob(".eval.json*")) == []
    finally:
        existing.unlink()


def test_eval_refuses_a_json_path_that_is_a_directory(cli, task_runs, tmp_path):
    result = cli.run("eval", "--checkpoint", task_runs["classify"], "--json", tmp_path)
    cli.assert_user_error(result, f"--json {tmp_path}: is a directory")


def test_eval_takes_real_pairs_whose_sources_repeat(cli, task_runs, tmp_path):
    # few distinct sources, but the targets repeat too: not labelled texts
    (tmp_path / "copy.tsv").write_text("".join(f"{c}\t{c}\n" for c in "abcde" * 8))
    result = cli.run(
        "eval", "--checkpoint", task_runs["seq2seq"], "--data", tmp_path / "copy.tsv",
        "--json", tmp_path / "m.json",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "(validation, 40 examples)" in result.out


def test_short_list_keeps_a_message_short():
    assert short_list(["a", "b"]) == "['a', 'b']"
    assert short_list([f"x{i}" for i in range(300)]) == "['x0', 'x1', 'x2', ... 297 more]"
    assert short_list(["y" * 50], width=10) == "['yyyyyy...]"
