"""The token cache from the command line: ``glassformer train`` encodes a text file's parts
once; ``eval``, ``--resume`` and a second run with the same tokenizer read them from the cache
(glassformer/data/token_cache.py), and train on the same batches."""

from __future__ import annotations

import glassformer.data.token_cache as tc

SHORT = ["--set", "sample.max_new_tokens=0", "--set", "train.eval_every=2"]


def test_train_encodes_once_then_eval_resume_and_a_new_run_read_the_cache(
    cli, tmp_path, monkeypatch
):
    monkeypatch.setattr(tc, "SHOWN_CHARS", 0)  # show every part, however short
    monkeypatch.setenv(tc.CACHE_ENV, str(tmp_path / "tokens"))
    data = tmp_path / "notes.txt"
    data.write_text("the cat sat on the mat.\n" * 60)  # 1,440 characters, the last 144 held out
    out = tmp_path / "run"
    first = cli.run("train", "--data", data, "--out", out, "--steps", "2", *cli.TINY, *SHORT)
    assert first.code == 0, first.err
    encoded = [line for line in first.err.splitlines() if line.startswith("encoding notes.txt")]
    assert encoded[-1].startswith("encoding notes.txt: 144/144 characters (100%), done in ")
    files = sorted((tmp_path / "tokens").glob("*.uint16"))
    assert sorted(f.stat().st_size for f in files) == [2 * 146, 2 * 1298]  # <BOS> .. <EOS>

    def hits(result):
        return [line.split(" tokens read")[0] for line in result.err.splitlines()
                if "tokens read from the token cache" in line]  # fmt: skip

    evaluated = cli.run("eval", "--checkpoint", out, "--batch-size", "8")
    assert evaluated.code == 0, evaluated.err
    assert hits(evaluated) == ["notes.txt, characters 1,296..1,440: 146"]

    resumed = cli.run("train", "--out", out, "--resume", "--steps", "4")
    assert resumed.code == 0, resumed.err
    expected = ["notes.txt, characters 0..1,296: 1,298", "notes.txt, characters 1,296..1,440: 146"]
    assert hits(resumed) == expected and "encoding" not in resumed.err

    again = tmp_path / "again"
    second = cli.run("train", "--data", data, "--out", again, "--steps", "4", *cli.TINY, *SHORT)
    assert second.code == 0, second.err
    assert hits(second) == expected and sorted((tmp_path / "tokens").glob("*.uint*")) == files
    assert cli.train_losses(again) == cli.train_losses(out)  # resume: the same batches


def test_a_cache_that_cannot_be_written_is_one_note_and_the_run_goes_on(
    cli, tmp_path, monkeypatch
):
    """The library warns (data.token_cache.CacheNote); the command line shows the note."""
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv(tc.CACHE_ENV, str(blocked / "tokens"))
    data = tmp_path / "notes.txt"
    data.write_text("the cat sat on the mat.\n" * 60)
    result = cli.run("train", "--data", data, "--out", tmp_path / "run", "--steps", "1",
                     *cli.TINY, *SHORT)  # fmt: skip
    assert result.code == 0, result.err
    notes = [line for line in result.err.splitlines() if "token cache" in line]
    assert notes == [
        f"glassformer: note: the token cache {blocked / 'tokens'} cannot be written (Not a "
        f"directory); the tokens of {part} are kept in memory for this run"
        for part in ("notes.txt", "notes.txt")
    ]
