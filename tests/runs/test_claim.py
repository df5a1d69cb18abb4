"""The run folder ``train`` writes: output paths checked before any data is loaded, nothing
written through a symbolic link, one file mode (the umask's), and a run that never starts over
another one kept in its folder (the demo's included)."""

import contextlib
import os
import shutil
import stat

import pytest

import glassformer.runs.loading as train_cmd
from glassformer.cli import build_parser
from glassformer.cli.train_args import gather_settings
from glassformer.runs.plan import make_plan, model_config
from glassformer.runs.record import write_run


@pytest.fixture
def no_loading(monkeypatch):
    """Fail the test if ``train`` gets as far as loading its data."""

    def load_splits(plan):
        raise AssertionError("the data was loaded before the output path was checked")

    monkeypatch.setattr(train_cmd, "load_splits", load_splits)


# Bug 7: an output path that cannot be written is one line, before anything is loaded ----------
def test_train_out_naming_a_file_is_one_line_before_loading(cli, lm_files, tmp_path, no_loading):
    afile = tmp_path / "afile"
    afile.write_text("mine\n")
    for out, words in (
        (afile, [f"--out {afile}", "exists and is not a directory", "allowed"]),
        (afile / "run", [f"--out {afile / 'run'}", f"{afile} is a file, not a directory"]),
    ):
        result = cli.run("train", "--data", lm_files[0], "--out", out, *cli.TINY)
        cli.assert_user_error(result, *words)
        result = cli.run("train", "--data", lm_files[0], "--out", out, "--resume")
        cli.assert_user_error(result, *words)
    assert afile.read_text() == "mine\n"


def test_eval_and_inspect_outputs_are_checked_first(cli, tmp_path):
    afile, folder = tmp_path / "afile", tmp_path / "folder"
    afile.write_text("mine\n")
    folder.mkdir()
    missing = tmp_path / "no-checkpoint"  # would be the next error: the output comes first
    result = cli.run("eval", "--checkpoint", missing, "--json", folder)
    cli.assert_user_error(result, f"--json {folder}: is a directory", "allowed: a file name")
    result = cli.run("eval", "--checkpoint", missing, "--json", afile / "m.json")
    cli.assert_user_error(result, f"{afile} is a file, not a directory")
    result = cli.run("inspect", "--checkpoint", missing, "--text", "a", "--out", afile / "pics")
    cli.assert_user_error(result, f"--out {afile / 'pics'}", f"{afile} is a file")
    assert afile.read_text() == "mine\n"


# Bug 8: nothing is written through a link in the run folder --------------------------------
def contents(path):
    """A file's bytes, or every entry of a folder (links not followed): its kind and bytes."""
    if not path.is_dir():
        return path.read_bytes()
    found = {}
    for entry in sorted(path.rglob("*")):
        rel = str(entry.relative_to(path))
        if entry.is_symlink():
            found[rel] = ("link", os.readlink(entry))
        else:
            found[rel] = entry.read_bytes() if entry.is_file() else "folder"
    return found


@pytest.mark.parametrize("name", ["metrics.jsonl", "run.json", "checkpoints", "tensorboard"])
def test_resume_refuses_a_link_in_the_run_folder_and_writes_nothing(cli, lm_run, tmp_path, name):
    run, outside = tmp_path / "run", tmp_path / "outside"
    shutil.copytree(lm_run[0], run, symlinks=True)
    entry = run / name
    if entry.is_dir():
        entry.rename(outside)  # the run's own folder moved elsewhere and linked back
    else:
        outside.write_bytes(b'{"step": 1, "loss": 9.0}\nsomeone else\'s file\n')
        entry.unlink()
    entry.symlink_to(outside)
    before, outside_before = contents(run), contents(outside)
    result = cli.run("train", "--out", run, "--resume", "--steps", "50")
    cli.assert_user_error(result, f"{entry} is a symbolic link (to {outside})", "link the run")
    assert contents(run) == before
    assert contents(outside) == outside_before


def test_a_linked_run_folder_trains_with_the_umask_modes(cli, lm_files, tmp_path):
    """The run folder may be a link (to a bigger disk); every file the run writes gets
    0o666 & ~umask, every folder 0o777 & ~umask."""
    (tmp_path / "disk").mkdir()
    (tmp_path / "runs").symlink_to(tmp_path / "disk")
    for mask, file, folder in ((0o077, 0o600, 0o700), (0o022, 0o644, 0o755)):
        out = tmp_path / "runs" / f"run-{mask:o}"
        before = os.umask(mask)
        try:
            result = cli.run(
                "train", "--data", lm_files[0], "--out", out, "--steps", "2", *cli.TINY
            )
        finally:
            os.umask(before)
        assert result.code == 0, result.err
        assert "note" not in result.err  # TINY's warmup (2) is not longer than the 2 steps
        real = tmp_path / "disk" / out.name
        names = {str(p.relative_to(real)) for p in real.rglob("*")}
        step = "checkpoints/step-000002/"
        written = ["model.safetensors", "trainer.safetensors", "config.json", "tokenizer.json"]
        written = [step + name for name in (*written, "trainer.json")]
        assert {"run.json", "metrics.jsonl", "loss.png", "tensorboard", *written} <= names
        modes = {str(p.relative_to(real)): stat.S_IMODE(p.stat().st_mode) for p in real.rglob("*")}
        assert modes == {n: folder if (real / n).is_dir() else file for n in names}
        assert stat.S_IMODE(real.stat().st_mode) == folder


# Item 5: a warmup longer than the run; the demo's folder --------------------------------------
def test_a_warmup_longer_than_the_run_gets_a_note(cli, lm_files, tmp_path):
    args = ["train", "--data", lm_files[0], "--steps", "2", *cli.TINY]
    result = cli.run(*args, "--out", tmp_path / "a", "--set", "train.warmup=4")
    assert result.code == 0, result.err
    # lr(s) = lr (s + 1) / warmup: 1e-2 * 2 / 4 at the last step (s = 1)
    assert (
        "glassformer: note: train.warmup = 4 is longer than the run's 2 steps: the learning "
        "rate only rises, to 0.005 at the last step, and never reaches train.lr = 0.01 "
        "(--set train.warmup=N with N <= 2 reaches it)"
    ) in result.err.splitlines()
    # metrics.jsonl logs, after each step, the rate of the next: step 2 ran at 0.005
    assert cli.metrics(tmp_path / "a")[0]["lr"] == pytest.approx(0.005)


def kept(folder, argv):
    """Make ``folder`` hold a run of ``glassformer train argv`` (its run.json and an empty
    checkpoint), as if it had trained."""
    settings, _ = gather_settings(build_parser().parse_args(["train", *argv]))
    plan = make_plan(settings)
    plan.out = folder
    write_run(plan, model_config(plan, 70))
    (folder / "checkpoints" / "step-000001").mkdir(parents=True)


@contextlib.contextmanager
def cwd(path):
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def test_the_demo_does_not_show_another_run_kept_in_its_folder(cli, tmp_path, no_loading):
    """``--data shakespeare`` and the demo share the default folder runs/shakespeare-char:
    the demo shows only a demo run kept there, and neither starts over the other."""
    out = tmp_path / "runs" / "shakespeare-char"
    with cwd(tmp_path):
        kept(out, ["--data", "shakespeare", "--steps", "50"])
        before = (out / "run.json").read_bytes()
        result = cli.run("train")
        cli.assert_user_error(
            result, "runs/shakespeare-char already holds a run with other settings "
            "(model.max_len not set there, 64 here)", "--out runs/shakespeare-char and --resume",
            "choose another --out",
        )  # fmt: skip
        assert (out / "run.json").read_bytes() == before
        result = cli.run("train", "--data", "shakespeare")
        cli.assert_user_error(result, "already holds a run with these settings", "--resume")


def test_a_demo_run_kept_in_its_folder_is_continued_by_the_command_it_names(
    cli, tmp_path, monkeypatch
):
    with cwd(tmp_path):
        kept(tmp_path / "runs" / "shakespeare-char", ["--steps", "1"])
        result = cli.run("train", "--data", "shakespeare")
        cli.assert_user_error(
            result, "already holds a run with other settings (model.max_len 64 there, not set "
            "here)",
        )  # fmt: skip
        result = cli.run("train")
        assert result.code == 0, result.err
        assert result.out.splitlines() == [
            "glassformer: runs/shakespeare-char holds the demo run; continuing it (delete that "
            "folder to train it again)",
            "runs/shakespeare-char has already reached step 1; to train on: glassformer train "
            "--out runs/shakespeare-char --resume --steps N, with N above 1",
        ]
        # the command it names gets past the run folder's checks to loading the data
        monkeypatch.setattr(train_cmd, "load_splits", lambda plan: exit(f"loads {plan.out}"))
        with pytest.raises(SystemExit, match="loads runs/shakespeare-char"):
            cli.run("train", "--out", "runs/shakespeare-char", "--resume", "--steps", "2")
