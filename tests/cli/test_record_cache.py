"""Records in the token cache from the command line: ``glassformer train`` on a classification
file encodes its training and held-out rows once (glassformer/data/record_cache.py); ``eval``
and ``--resume`` read them from the cache, and the run trains on the batches of encoding in
memory, with the same count of truncated texts; ``data.workers`` caps the processes that
encode them."""

from __future__ import annotations

import glassformer.data.record_cache as rc
import glassformer.tokenizers.parallel as parallel

from .test_own_files import sms_rows


def token_folders(cache):
    """The record folders in the cache folder (beside them: scans/, the files' scans)."""
    return sorted(p for p in cache.iterdir() if p.suffix == ".records")

SHORT = ["--set", "train.eval_every=2"]


def test_train_encodes_records_once_then_eval_and_resume_read_the_cache(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(rc, "SHOWN_CHARS", 0)  # show every split, however short
    data = tmp_path / "sms.tsv"
    data.write_text("".join(f"{label}\t{text}\n" for label, text in sms_rows(40)))
    memory = tmp_path / "memory"
    result = cli.run("train", "--task", "classify", "--data", data, "--out", memory,
                     "--steps", "4", *cli.TINY, *SHORT)  # fmt: skip
    assert result.code == 0, result.err
    assert "encoding" not in result.err  # a small file: encoded in memory

    monkeypatch.setattr(rc, "CACHE_CHARS", 0)  # every split through the cache
    monkeypatch.setenv("GLASSFORMER_CACHE", str(tmp_path / "tokens"))
    out = tmp_path / "run"
    first = cli.run("train", "--task", "classify", "--data", data, "--out", out,
                    "--steps", "2", *cli.TINY, *SHORT)  # fmt: skip
    assert first.code == 0, first.err
    done = [line.split(",")[0] for line in first.err.splitlines() if "(100%)" in line]
    assert done == ["encoding sms.tsv (train): 36/36 records (100%)",
                    "encoding sms.tsv (validation): 4/4 records (100%)"]  # fmt: skip
    assert len(token_folders(tmp_path / "tokens")) == 2
    assert (
        "\n5 of 36 training and 1 of 4 validation texts longer than max_len 16 were truncated "
        "(data.overflow)\n"
    ) in first.out

    def hits(result):
        return [line.split(":")[0] for line in result.err.splitlines()
                if "read from the token cache" in line]  # fmt: skip

    evaluated = cli.run("eval", "--checkpoint", out, "--batch-size", "8")
    assert evaluated.code == 0, evaluated.err
    assert hits(evaluated) == ["sms.tsv (validation)"]
    resumed = cli.run("train", "--out", out, "--resume", "--steps", "4")
    assert resumed.code == 0, resumed.err
    assert hits(resumed) == ["sms.tsv (train)", "sms.tsv (validation)"]
    assert "encoding" not in resumed.err
    assert cli.train_losses(out) == cli.train_losses(memory)  # the same batches


def test_the_data_workers_setting_encodes_on_that_many_processes(cli, tmp_path, monkeypatch):
    started = []

    class Recorded(parallel.EncodePool):
        def __init__(self, tokenizer, workers, dtype):
            super().__init__(tokenizer, workers, dtype)
            started.append(workers)

    monkeypatch.setattr(rc, "EncodePool", Recorded)
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 2)
    monkeypatch.setattr(rc, "CACHE_CHARS", 0)  # every split through the cache,
    monkeypatch.setattr(rc, "PARALLEL_CHARS", 0)  # on the workers unless the setting says 1
    monkeypatch.setenv("GLASSFORMER_CACHE", str(tmp_path / "tokens"))
    data = tmp_path / "sms.tsv"
    data.write_text("".join(f"{label}\t{text}\n" for label, text in sms_rows(40)))
    train = ["train", "--task", "classify", "--data", data, *cli.TINY, *SHORT]
    out = tmp_path / "run"
    first = cli.run(*train, "--out", out, "--steps", "2", "--set", "data.workers=1")
    assert first.code == 0, first.err
    assert started == [] and len(token_folders(tmp_path / "tokens")) == 2  # this process

    # --resume may change how the data are encoded: here into another cache, on 2 workers
    monkeypatch.setenv("GLASSFORMER_CACHE", str(tmp_path / "other"))
    resumed = cli.run("train", "--out", out, "--resume", "--steps", "4", "--set", "data.workers=2")
    assert resumed.code == 0, resumed.err
    assert started == [2, 2]  # the training and the validation rows
    other = cli.run("train", "--out", out, "--resume", "--set", "data.overflow=drop")
    cli.assert_user_error(other, "data.overflow")  # what the data are may not change

    for bad in ("0", "two", "1.5"):
        result = cli.run(*train, "--out", tmp_path / "bad", "--set", f"data.workers={bad}")
        cli.assert_user_error(result, f"workers is {bad if bad != 'two' else repr(bad)}: ")
        assert not (tmp_path / "bad").exists()
