"""``--resume`` on data other than the run's: run.json records the size and SHA-256 of the
training and validation data; a changed file (or built-in dataset) is refused in one line
naming it, unless ``--data-changed-ok`` accepts the change; a run.json from before the record
resumes with a note."""

from __future__ import annotations

import hashlib
import json

SHORT = ["--set", "train.save_every=2", "--set", "sample.max_new_tokens=0"]


def train(cli, data, out, *extra):
    return cli.run("train", "--data", data, "--out", out, *cli.TINY, *SHORT, *extra)


def recorded(out):
    return json.loads((out / "run.json").read_text())["data_identity"]


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_changed_training_file_is_refused_then_accepted_with_the_flag(cli, tmp_path):
    data, out = tmp_path / "notes.txt", tmp_path / "run"
    data.write_text("the cat sat on the mat.\n" * 60)
    assert train(cli, data, out, "--steps", "2").code == 0
    part = {"file": str(data), "bytes": 1440, "sha256": sha256(data)}
    assert recorded(out) == {"training": part, "validation": part}  # 10% held out of it

    with data.open("a") as f:
        f.write("zebras quaff vexing jumbo kiwis\n")  # new characters: <UNK> to the run
    refused = cli.run("train", "--out", out, "--resume", "--steps", "4")
    cli.assert_user_error(
        refused,
        f"the training file {data} changed since the run last read it (1,440 bytes, sha256 "
        f"{part['sha256'][:12]}... then; 1,472 bytes, sha256 {sha256(data)[:12]}... now)",
        "start a new run with another --out",
        f"continue {out} on the changed data with --resume and --data-changed-ok",
    )
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step-000002"]
    assert recorded(out)["training"] == part

    accepted = cli.run("train", "--out", out, "--resume", "--steps", "4", "--data-changed-ok")
    assert accepted.code == 0, accepted.err
    assert "resuming at step 2 to step 4" in accepted.out
    notes = [line for line in accepted.err.splitlines() if "note:" in line]
    assert len(notes) == 1 and f"the training file {data} changed" in notes[0]
    assert notes[0].endswith("continuing on the changed data (--data-changed-ok)")
    now = {"file": str(data), "bytes": 1472, "sha256": sha256(data)}
    assert recorded(out) == {"training": now, "validation": now}

    # the accepted data are the run's now: resuming on them needs no flag
    again = cli.run("train", "--out", out, "--resume", "--steps", "6")
    assert again.code == 0, again.err
    assert "resuming at step 4 to step 6" in again.out and "note:" not in again.err


def test_a_changed_validation_file_is_refused(cli, lm_files, tmp_path):
    valid, out = tmp_path / "valid.txt", tmp_path / "run"
    valid.write_text("the mat sat on the cat.\n" * 8)
    assert train(cli, lm_files[0], out, "--val-data", valid, "--steps", "2").code == 0
    valid.write_text("the mat sat on the cat!\n" * 8)  # same size, other bytes
    refused = cli.run("train", "--out", out, "--resume", "--steps", "4")
    cli.assert_user_error(refused, f"the validation file {valid} changed", "--data-changed-ok")


def test_unchanged_data_resume_and_the_flag_needs_resume(cli, lm_files, tmp_path):
    out = tmp_path / "run"
    assert train(cli, lm_files[0], out, "--steps", "2").code == 0
    resumed = cli.run("train", "--out", out, "--resume", "--steps", "4")
    assert resumed.code == 0, resumed.err
    assert "resuming at step 2 to step 4" in resumed.out and "note:" not in resumed.err
    cli.assert_user_error(
        train(cli, lm_files[0], tmp_path / "new", "--data-changed-ok"),
        "--data-changed-ok applies to --resume",
    )


def test_a_run_without_the_record_resumes_with_a_note_and_gets_it(cli, lm_files, tmp_path):
    out = tmp_path / "run"
    assert train(cli, lm_files[0], out, "--steps", "2").code == 0
    run_file = out / "run.json"
    before = json.loads(run_file.read_text())
    run_file.write_text(json.dumps({k: v for k, v in before.items() if k != "data_identity"}))
    resumed = cli.run("train", "--out", out, "--resume", "--steps", "4")
    assert resumed.code == 0, resumed.err
    assert "resuming at step 2 to step 4" in resumed.out
    assert f"glassformer: note: {run_file} records no size and hash of the run's data" in (
        resumed.err
    )
    assert recorded(out) == before["data_identity"]


def test_a_built_in_dataset_is_recorded_by_its_examples(cli, tmp_path):
    out = tmp_path / "run"
    small = ["--set", "data.num_examples=64", "--set", "data.max_length=5"]
    assert train(cli, "is_sorted", out, *small, "--steps", "2").code == 0
    identity = recorded(out)
    assert identity["training"]["dataset"] == "is_sorted"
    assert identity["validation"]["split"] == "validation"
    assert identity["training"]["sha256"] != identity["validation"]["sha256"]
    # a generator that gives other examples (another version) reads as changed data
    run = json.loads((out / "run.json").read_text())
    run["data_identity"]["training"]["sha256"] = "0" * 64
    (out / "run.json").write_text(json.dumps(run))
    refused = cli.run("train", "--out", out, "--resume", "--steps", "4")
    cli.assert_user_error(
        refused, "the training data of the built-in dataset is_sorted changed", "--out"
    )
