"""Hostile training state: a checkpoint's trainer.json / trainer.safetensors that is cut short,
is a pickle, or lies is refused on resume with a ValueError naming the file, before anything
is restored, and nothing in it runs. (Hostile model weights, configs and tokenizer files are
in tests/models/test_checkpoint.py and tests/test_tokenizers.py.)"""

from __future__ import annotations

import json
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from glassformer import DecoderLM, preset
from glassformer.data import TextDataset
from glassformer.tokenizers import CharTokenizer
from glassformer.training import TrainConfig, Trainer
from glassformer.training.state import latest_checkpoint

TEXTS = ["the cat sat on the mat."] * 8
TOK = CharTokenizer().train(TEXTS)
DATA = TextDataset("cats", "lm", "train", TEXTS)


def trainer(run_dir: Path, steps: int = 2) -> Trainer:
    torch.manual_seed(0)
    model = DecoderLM(preset("tiny", vocab_size=TOK.vocab_size, d_model=16, n_head=2, n_layer=1))
    cfg = TrainConfig(task="lm", steps=steps, batch_size=2, save_every=2, log_every=1)
    return Trainer(model, TOK, DATA, None, cfg, run_dir, progress=False)


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("hostile") / "run"
    trainer(run).fit()
    return run


class Boom:
    """Unpickling this would create the file ``pwned`` names (it must never happen)."""

    def __init__(self, pwned: Path) -> None:
        self.pwned = pwned

    def __reduce__(self):
        return (Path.touch, (self.pwned,))


def edit_json(**changes) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        meta = json.loads((folder / "trainer.json").read_text())
        for dotted, value in changes.items():
            target, *path, last = [meta, *dotted.split("__")]
            for key in path:
                target = target[int(key)] if isinstance(target, list) else target[key]
            target[last] = value
        (folder / "trainer.json").write_text(json.dumps(meta))

    return edit


def edit_tensors(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        tensors = load_file(folder / "trainer.safetensors")
        edit(tensors)
        save_file(tensors, folder / "trainer.safetensors")

    return apply


def truncate(name: str) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        data = (folder / name).read_bytes()
        (folder / name).write_bytes(data[: len(data) // 2])

    return apply


def replace_with_pickle(folder: Path) -> None:
    with open(folder / "trainer.safetensors", "wb") as f:
        pickle.dump(Boom(folder.parent.parent / "pwned"), f)


MOMENT = "opt/embed.token.weight/exp_avg"
CASES = {
    "json truncated": (truncate("trainer.json"), "trainer.json: unreadable"),
    "tensors truncated": (truncate("trainer.safetensors"), "trainer.safetensors: unreadable"),
    "tensors a pickle": (replace_with_pickle, "trainer.safetensors: unreadable"),
    "json not an object": (
        lambda f: (f / "trainer.json").write_text("[1, 2]"),
        "trainer.json: not a JSON object",
    ),
    "step lies": (edit_json(step=99), "trainer.json: step is 99, but the folder is step-000002"),
    "step a string": (edit_json(step="2"), "step is '2'"),
    "lr a string": (
        edit_json(optimizer__param_groups__0__lr="0.1"),
        r"param_groups\[0\].lr is '0.1'",
    ),
    "unknown group key": (
        edit_json(optimizer__param_groups__0__evil=1),
        r"param_groups\[0\] has keys other than",
    ),
    "foreign parameter": (
        edit_json(optimizer__param_groups__0__params=["os.system"]),
        "parameters are not the model's",
    ),
    "one group too few": (edit_json(optimizer__param_groups=[]), "not a list of 2 groups"),
    "scheduler garbage": (edit_json(scheduler={"base_lrs": "x"}), "scheduler state has keys"),
    "scheduler value lies": (edit_json(scheduler__last_epoch=[1]), "scheduler last_epoch"),
    "moment of another shape": (
        edit_tensors(lambda t: t.update({MOMENT: torch.zeros(3, 3)})),
        rf"{MOMENT} has shape \(3, 3\)",
    ),
    "state of no parameter": (
        edit_tensors(lambda t: t.update({"opt/evil/exp_avg": torch.zeros(1)})),
        "'opt/evil/exp_avg' is not the state of a parameter",
    ),
    "integer moment": (
        edit_tensors(lambda t: t.update({MOMENT: t[MOMENT].long()})),
        "dtype torch.int64",
    ),
    "no rng": (edit_tensors(lambda t: t.pop("rng.cpu")), "no CPU random-number state"),
    "a moment left out": (
        edit_tensors(lambda t: t.pop(MOMENT)),
        r"the optimizer state of embed.token.weight lacks \['exp_avg'\]",
    ),
    "a parameter's whole state left out": (
        edit_tensors(lambda t: [t.pop(k) for k in list(t) if k.startswith("opt/embed.token")]),
        r"embed.token.weight lacks \['exp_avg', 'exp_avg_sq', 'step'\]",
    ),
    "a field not listed": (
        edit_json(optimizer__fields={}),
        r"state \['exp_avg', 'exp_avg_sq', 'step'\] of decoder.layers.0.attn_norm.bias is not "
        "listed in trainer.json",
    ),
    "no list of fields": (edit_json(optimizer__fields=None), "optimizer.fields is not a mapping"),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_resume_refuses_hostile_training_state(saved_run, tmp_path, case):
    run = tmp_path / "run"
    shutil.copytree(saved_run, run)
    spoil, message = CASES[case]
    folder = latest_checkpoint(run)
    spoil(folder)
    again = trainer(run, steps=4)
    before = {k: v.clone() for k, v in again.model.state_dict().items()}
    with pytest.raises(ValueError, match=message) as err:
        again.fit(resume=True)
    assert str(folder) in str(err.value)
    assert again.step == 0  # nothing was restored
    for name, tensor in again.model.state_dict().items():
        assert torch.equal(tensor, before[name]), name
    assert not (tmp_path / "pwned").exists() and not (run / "pwned").exists()
    assert not (run / ".lock").exists()


def test_an_untouched_copy_resumes(saved_run, tmp_path):
    """The control: the same copy, unspoilt, resumes to step 4."""
    run = tmp_path / "run"
    shutil.copytree(saved_run, run)
    again = trainer(run, steps=4)
    again.fit(resume=True)
    assert again.step == 4
