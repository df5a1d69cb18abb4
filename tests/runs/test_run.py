"""``glassformer.runs.Run``: a run planned, trained and resumed from Python is the run the
command line makes with the same settings, and its mistakes are ``RunError`` lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from glassformer.cli import main
from glassformer.runs import Run, RunError

TEXT = "the cat sat on the mat.\n" * 60
TINY = {
    "model": {"d_model": 32, "n_layer": 1, "n_head": 2, "max_len": 16},
    "train": {"batch_size": 8, "warmup": 2, "lr": 1e-2, "log_every": 1, "eval_batches": 2},
}


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def text(tmp_path: Path) -> Path:
    path = tmp_path / "cats.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


def losses(run_dir: Path) -> list[tuple[int, float]]:
    records = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [(r["step"], r["loss"]) for r in records if "loss" in r]


def without_out(run_json: Path) -> dict:
    data = json.loads(run_json.read_text())
    data.pop("out")
    data["settings"]["run"].pop("out")
    return data


def test_a_run_from_python_is_the_run_the_command_line_makes(tmp_path, text, capsys):
    run = Run.plan(data=str(text), out=tmp_path / "py", steps=3, settings=TINY)
    last = run.train()
    argv = ["train", "--data", str(text), "--out", str(tmp_path / "cli"), "--steps", "3"]
    for section, table in TINY.items():
        for key, value in table.items():
            argv += ["--set", f"{section}.{key}={value}"]
    argv += ["--set", "sample.max_new_tokens=0"]
    assert main(argv) == 0
    capsys.readouterr()
    py, cli = without_out(tmp_path / "py" / "run.json"), without_out(tmp_path / "cli" / "run.json")
    py["settings"].pop("sample", None), cli["settings"].pop("sample")
    py.pop("sample"), cli.pop("sample")
    assert py == cli
    assert losses(tmp_path / "py") == losses(tmp_path / "cli")
    assert last["step"] == 3 and last["loss"] == losses(tmp_path / "py")[-1][1]
    assert "val_loss" in last
    assert (tmp_path / "py" / "checkpoints" / "step-000003" / "model.safetensors").is_file()
    for folder in ("py", "cli"):  # the same files in both folders, the curves included
        assert (tmp_path / folder / "loss.png").is_file()
    assert run.loss_plot == tmp_path / "py" / "loss.png"
    assert sorted(p.name for p in (tmp_path / "py").iterdir()) == sorted(
        p.name for p in (tmp_path / "cli").iterdir()
    )


def test_a_run_resumed_from_python_extends_it(tmp_path, text):
    out = tmp_path / "run"
    Run.plan(data=str(text), out=out, steps=2, settings=TINY).train()
    run = Run.resume(out, steps=4)
    assert run.step == 2 and not run.done
    assert run.train()["step"] == 4
    assert [s for s, _ in losses(out)] == [1, 2, 3, 4]
    again = Run.resume(out)
    assert again.done
    with pytest.raises(RunError, match="already reached step 4"):
        again.train()
    with pytest.raises(RunError, match="train.steps=3 is below step 4"):
        Run.resume(out, steps=3)
    with pytest.raises(RunError, match="already holds a run with these settings"):
        Run.plan(data=str(text), out=out, steps=4, settings=TINY)
    with pytest.raises(RunError, match=r"train.seed=1337, but the options give 5"):
        Run.resume(out, settings={"train": {"seed": 5}})


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"dta": "x"}, "Run.plan got dta; allowed: config, settings, out, task, data"),
        ({"settings": {"model": {"n_layr": 2}}}, "unknown key model.n_layr; allowed in [model]"),
        ({"settings": {"train": {"lr": "fast"}}}, "train.lr='fast' must be of type float"),
        ({"settings": {"modle": {}}}, "unknown settings table 'modle'"),
        ({"settings": "model.n_layer=2"}, "settings='model.n_layer=2': allowed a dict of tables"),
        ({"settings": {"model": 3}}, "settings={'model': 3}: allowed a dict of tables"),
        ({"steps": -1}, "train settings: steps=-1 must be an int >= 0"),
        ({"tokenizer": "bytes"}, "run.tokenizer="),
        ({"data": "no-such-file.txt"}, "data no-such-file.txt: the file does not exist"),
        ({"config": "no-such-config"}, "config no-such-config: no such file"),
        ({"model": "tiny-encoder"}, "model tiny-encoder is a preset of the encoder family"),
    ],
)
def test_a_mistake_is_a_run_error_naming_it(tmp_path, kwargs, words):
    with pytest.raises(RunError) as caught:
        Run.plan(out=tmp_path / "run", **kwargs)
    assert isinstance(caught.value, ValueError)
    assert words in str(caught.value)
    assert "--" not in str(caught.value)  # the library names arguments and settings, no flag
    assert not (tmp_path / "run").exists()


def test_summary_and_evaluate_give_what_glassformer_train_and_eval_print(tmp_path, text):
    run = Run.plan(data=str(text), out=tmp_path / "run", steps=2, settings=TINY)
    run.train()
    summary = run.summary()
    assert (summary["task"], summary["data"], summary["tokenizer"]) == ("lm", "cats.txt", "char")
    assert (summary["step"], summary["steps"], summary["context"]) == (0, 2, 16)
    assert summary["parameters"] == run.model.num_parameters() == summary["trained"]
    chars = len(text.read_text(encoding="utf-8")) // 10  # the last tenth validates the run
    assert summary["held_out"] == {"file": "cats.txt", "fraction": 0.1, "unit": "characters",
                                   "count": chars, "spread": False}  # fmt: skip
    assert summary["overflow"] is None  # a language model's text is cut into windows
    report = run.evaluate(batch_size=4, batches=3)
    # the held-out part of the text: 10 windows, fewer than 3 batches of 4
    assert (report["task"], report["split"], report["examples"]) == ("lm", "validation", 10)
    again = Run.resume(tmp_path / "run").evaluate(batch_size=4, batches=3)
    assert again == report
    written = tmp_path / "eval.json"
    args = ["--checkpoint", str(tmp_path / "run"), "--batch-size", "4", "--batches", "3"]
    assert main(["eval", *args, "--json", str(written)]) == 0
    assert json.loads(written.read_text()) == json.loads(json.dumps(report))


def test_resuming_a_folder_without_a_run_is_a_run_error(tmp_path):
    with pytest.raises(RunError, match="nothing to resume in .*: it has no run.json"):
        Run.resume(tmp_path)


def test_a_run_of_zero_steps_is_refused_before_anything_is_written(tmp_path, text):
    run = Run.plan(data=str(text), out=tmp_path / "run", steps=0, settings=TINY)
    with pytest.raises(RunError, match="trains nothing"):
        run.train()
    assert not (tmp_path / "run").exists()


def test_a_resume_may_keep_fewer_checkpoints_and_names_the_models_own_values(tmp_path, text):
    """After a full disk, fewer checkpoints kept is what makes room: train.keep_last may
    change on resume (and prunes at once); a model setting the run left unset is refused
    naming the value its model has, not None."""
    out = tmp_path / "run"
    kept = {**TINY, "train": {**TINY["train"], "save_every": 1, "keep_last": 3, "eval_every": 0}}
    Run.plan(data=str(text), out=out, steps=3, settings=kept).train()
    ckpts = out / "checkpoints"
    assert sorted(p.name for p in ckpts.iterdir()) == [f"step-00000{i}" for i in (1, 2, 3)]
    with pytest.raises(RunError) as err:
        Run.resume(out, settings={"model": {"dropout": 0.3}})
    assert str(err.value) == (
        f"Run.resume continues {out} as it was started, with model.dropout=0.0 (its model's "
        "value), but the options give 0.3; leave that option out, or start a new run with "
        "another run.out"
    )
    run = Run.resume(out, steps=4, settings={"train": {"keep_last": 1}})
    assert run.plan.train.keep_last == 1 and run.train()["step"] == 4
    assert sorted(p.name for p in ckpts.iterdir()) == ["step-000004"]
    stored = json.loads((out / "run.json").read_text())
    assert stored["train"]["keep_last"] == 1  # and so it stays
    assert stored["settings"]["train"]["keep_last"] == 1
    with pytest.raises(RunError, match="with train.seed=1337, but the options give 5"):
        Run.resume(out, settings={"train": {"seed": 5, "keep_last": 2}})


def test_fit_or_build_too_early_says_what_comes_first_and_leaves_the_folder_free(tmp_path, text):
    """``fit()`` before ``load()`` and ``build()`` (an AttributeError that left the folder
    locked by this process) and ``build()`` before ``load()`` say what to call first; the
    folder is not locked after it: the same run then trains there."""
    out = tmp_path / "run"
    run = Run.plan(data=str(text), out=out, steps=2, settings=TINY)
    with pytest.raises(RunError) as err:
        run.fit()
    assert str(err.value) == (
        "Run.fit() comes after run.load() and run.build(), which make the model and its "
        "Trainer (run.train() calls all three)"
    )
    with pytest.raises(RunError) as err:
        run.build()
    assert str(err.value) == (
        "Run.build() comes after run.load(), which reads the data, the tokenizer and the "
        "model config (run.train() calls all three)"
    )
    assert not (out / ".lock").exists()
    assert run.train()["step"] == 2
    assert main(["train", "--data", str(text), "--out", str(out), "--resume", "--steps", "3"]) == 0


def test_the_lock_is_released_when_writing_run_json_fails(tmp_path, text, monkeypatch):
    import glassformer.runs.run as run_module

    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(run_module, "write_run", full_disk)
    run = Run.plan(data=str(text), out=tmp_path / "run", steps=2, settings=TINY)
    run.load()
    run.build()
    with pytest.raises(OSError, match="No space"):
        run.fit()
    assert not (tmp_path / "run" / ".lock").exists()
