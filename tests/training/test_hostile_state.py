"""Hostile training state: a checkpoint's trainer.json / trainer.safetensors that is cut short,
is a pickle, or lies is refused on resume with a ValueError naming the file, before anything
is restored, and nothing in it runs. (Hostile model weights, configs and tokenizer files are
in tests/models/test_checkpoint.py and tests/tokenizers/test_base.py.)"""

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


def trainer(run_dir: Path, steps: int = 2, **settings) -> Trainer:
    torch.manual_seed(0)
    model = DecoderLM(preset("tiny", vocab_size=TOK.vocab_size, d_model=16, n_head=2, n_layer=1))
    cfg = TrainConfig(task="lm", steps=steps, batch_size=2, save_every=2, log_every=1, **settings)
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
            target[int(last) if isinstance(target, list) else last] = value
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


MOMENT = "opt/embed.weight/exp_avg"
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
        "the optimizer's parameters are not the model's that train",
    ),
    "one group too few": (edit_json(optimizer__param_groups=[]), "not a list of 2 groups"),
    "scheduler garbage": (edit_json(scheduler={"base_lrs": "x"}), "scheduler state has keys"),
    "scheduler value lies": (
        edit_json(scheduler__last_epoch=[1]),
        r"scheduler.last_epoch is \[1\]; allowed a number",
    ),
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
        r"the optimizer state of embed.weight lacks \['exp_avg'\]",
    ),
    "a parameter's whole state left out": (
        edit_tensors(lambda t: [t.pop(k) for k in list(t) if k.startswith("opt/embed.weight/")]),
        r"embed.weight lacks \['exp_avg', 'exp_avg_sq', 'step'\]",
    ),
    "a field not listed": (
        edit_json(optimizer__fields={}),
        r"state \['exp_avg', 'exp_avg_sq', 'step'\] of blocks.0.attn.k_proj.bias is not "
        "listed in trainer.json",
    ),
    "no list of fields": (edit_json(optimizer__fields=None), "optimizer.fields is not a mapping"),
}
# numbers that would poison the run: named with their value and what is allowed
NAN, INF = float("nan"), float("inf")
GROUP = r"trainer.json: optimizer.param_groups\[{}\]"
NUMBERS = {
    "lr NaN": (
        edit_json(optimizer__param_groups__0__lr=NAN),
        GROUP.format(0) + r".lr is nan; allowed a finite number >= 0",
    ),
    "lr infinite": (edit_json(optimizer__param_groups__1__lr=INF), r"\]\.lr is inf"),
    "lr negative": (edit_json(optimizer__param_groups__0__lr=-0.1), r"\]\.lr is -0.1"),
    "lr true": (
        edit_json(optimizer__param_groups__0__lr=True),
        GROUP.format(0) + r".lr is True; allowed a number",
    ),
    "initial lr NaN": (
        edit_json(optimizer__param_groups__1__initial_lr=NAN),
        GROUP.format(1) + r".initial_lr is nan",
    ),
    "weight decay negative": (
        edit_json(optimizer__param_groups__0__weight_decay=-1.0),
        r"weight_decay is -1.0; allowed a finite number >= 0",
    ),
    "eps zero": (
        edit_json(optimizer__param_groups__0__eps=0.0),
        r"eps is 0.0; allowed a finite number > 0",
    ),
    "beta of 1": (
        edit_json(optimizer__param_groups__0__betas=[0.9, 1.0]),
        GROUP.format(0) + r".betas\[1\] is 1.0; allowed a number in \[0, 1\)",
    ),
    "beta NaN": (edit_json(optimizer__param_groups__1__betas=[NAN, 0.99]), r"betas\[0\] is nan"),
    "scalar NaN": (
        edit_json(optimizer__scalars={"embed.weight/step": NAN}),
        r"optimizer.scalars\['embed.weight/step'\] is nan",
    ),
    "scheduler base lr NaN": (
        edit_json(scheduler__base_lrs__0=NAN),
        r"trainer.json: scheduler.base_lrs\[0\] is nan; allowed a finite number >= 0",
    ),
    "scheduler last lr negative": (
        edit_json(scheduler___last_lr__1=-1e-3),
        r"scheduler._last_lr\[1\] is -0.001",
    ),
    "scheduler at another step": (
        edit_json(scheduler__last_epoch=7),
        r"scheduler.last_epoch is 7; allowed the checkpoint's step, 2",
    ),
    "scheduler step a fraction": (edit_json(scheduler__last_epoch=2.5), "last_epoch is 2.5"),
    "scheduler count negative": (
        edit_json(scheduler___step_count=-1),
        r"scheduler._step_count is -1; allowed a whole number >= 0",
    ),
    "best loss NaN": (
        edit_json(best={"step": 2, "loss": NAN}),
        r"trainer.json: best.loss is nan; allowed a finite number",
    ),
    "best not an object": (edit_json(best="x"), r"best is 'x'; allowed null or"),
    "best of a later step": (
        edit_json(best={"step": 9, "loss": 1.0}),
        r"best.step is 9; allowed a step from 1 to 2",
    ),
    "moment NaN": (
        edit_tensors(lambda t: t[MOMENT].view(-1)[3:5].fill_(NAN)),
        rf"trainer.safetensors: tensor '{MOMENT}' holds 2 NaN values: the optimizer's state is "
        "damaged",
    ),
    "second moment negative": (
        edit_tensors(lambda t: t[MOMENT + "_sq"].view(-1)[0].fill_(-1.0)),
        rf"{MOMENT}_sq holds 1 value like -1.0; allowed finite numbers >= 0",
    ),
    "step count beyond the step": (
        edit_tensors(lambda t: t["opt/embed.weight/step"].fill_(99.0)),
        r"embed.weight/step holds 1 value like 99.0; allowed a count from 0 to the "
        "checkpoint's step, 2",
    ),
}
CASES.update(NUMBERS)


# the state of the other optimizers (optim.state_fields): SGD's momentum buffer, RMSprop's
# square average, step and momentum buffer
SGD = {"optimizer": "sgd"}
RMSPROP = {"optimizer": "rmsprop", "momentum": 0.5}
BUFFER, SQUARE = "opt/embed.weight/momentum_buffer", "opt/embed.weight/square_avg"


def add_field(param: str, field: str, value: torch.Tensor) -> Callable[[Path], None]:
    """``field`` of ``param`` put in both files, as if the optimizer kept it."""

    def apply(folder: Path) -> None:
        edit_tensors(lambda t: t.update({f"opt/{param}/{field}": value}))(folder)
        meta = json.loads((folder / "trainer.json").read_text())
        meta["optimizer"]["fields"][param].append(field)
        (folder / "trainer.json").write_text(json.dumps(meta))

    return apply


def pop_name(folder: Path) -> None:
    """trainer.json without optimizer.name."""
    meta = json.loads((folder / "trainer.json").read_text())
    del meta["optimizer"]["name"]
    (folder / "trainer.json").write_text(json.dumps(meta))


def drop_field(param: str, field: str) -> Callable[[Path], None]:
    """``field`` of ``param`` taken out of both files, so that they agree."""

    def apply(folder: Path) -> None:
        edit_tensors(lambda t: t.pop(f"opt/{param}/{field}"))(folder)
        meta = json.loads((folder / "trainer.json").read_text())
        meta["optimizer"]["fields"][param].remove(field)
        (folder / "trainer.json").write_text(json.dumps(meta))

    return apply


OTHER_OPTIMIZERS = {
    "sgd: momentum buffer NaN": (
        SGD,
        edit_tensors(lambda t: t[BUFFER].view(-1)[0].fill_(NAN)),
        rf"tensor '{BUFFER}' holds 1 NaN value: the optimizer's state is damaged",
    ),
    "sgd: momentum buffer of another shape": (
        SGD,
        edit_tensors(lambda t: t.update({BUFFER: torch.zeros(3)})),
        rf"{BUFFER} has shape \(3,\); the model needs \({TOK.vocab_size}, 16\)",
    ),
    "sgd: momentum buffer left out": (
        SGD,
        edit_tensors(lambda t: t.pop(BUFFER)),
        r"the optimizer state of embed.weight lacks \['momentum_buffer'\]",
    ),
    "sgd: an Adam moment": (
        SGD,
        add_field("embed.weight", "exp_avg", torch.zeros(TOK.vocab_size, 16)),
        r"trainer.safetensors: the optimizer state of embed.weight holds \['exp_avg', "
        r"'momentum_buffer'\]; sgd with its settings keeps \['momentum_buffer'\]",
    ),
    "sgd: a field of no optimizer": (
        SGD,
        edit_tensors(lambda t: t.update({"opt/embed.weight/evil": torch.zeros(1)})),
        r"'opt/embed.weight/evil' is no optimizer's state; allowed: step, exp_avg, exp_avg_sq, "
        "max_exp_avg_sq, momentum_buffer, square_avg, grad_avg",
    ),
    "sgd: momentum of 1": (
        SGD,
        edit_json(optimizer__param_groups__0__momentum=1.0),
        GROUP.format(0) + r".momentum is 1.0; allowed a number in \[0, 1\)",
    ),
    "sgd: nesterov a string": (
        SGD,
        edit_json(optimizer__param_groups__1__nesterov="yes"),
        GROUP.format(1) + r".nesterov is 'yes'; allowed true or false",
    ),
    "sgd: state of adamw": (
        SGD,
        edit_json(optimizer__name="adamw"),
        r"trainer.json: the checkpoint was trained with the optimizer adamw, this run uses "
        r"sgd; resume with train.optimizer=adamw, or start a new run",
    ),
    "sgd: no optimizer name, so adamw's": (
        SGD,
        pop_name,
        "the checkpoint was trained with the optimizer adamw, this run uses sgd",
    ),
    "sgd: an unknown optimizer": (
        SGD,
        edit_json(optimizer__name="lion"),
        r"trainer.json: optimizer.name is 'lion'; allowed one of adamw, adam, sgd, rmsprop",
    ),
    "sgd: a name not a string": (
        SGD,
        edit_json(optimizer__name=["sgd"]),
        r"optimizer.name is \['sgd'\]; allowed one of",
    ),
    "rmsprop: square average negative": (
        RMSPROP,
        edit_tensors(lambda t: t[SQUARE].view(-1)[2].fill_(-1.0)),
        rf"{SQUARE} holds 1 value like -1.0; allowed finite numbers >= 0",
    ),
    "rmsprop: step count beyond the step": (
        RMSPROP,
        edit_tensors(lambda t: t["opt/embed.weight/step"].fill_(3.0)),
        r"embed.weight/step holds 1 value like 3.0; allowed a count from 0 to the "
        "checkpoint's step, 2",
    ),
    "rmsprop: alpha NaN": (
        RMSPROP,
        edit_json(optimizer__param_groups__0__alpha=NAN),
        GROUP.format(0) + r".alpha is nan; allowed a number in \[0, 1\)",
    ),
    "rmsprop: momentum buffer out of both files": (
        RMSPROP,
        drop_field("embed.weight", "momentum_buffer"),
        r"the optimizer state of embed.weight holds \['square_avg', 'step'\]; rmsprop with its "
        r"settings keeps \['momentum_buffer', 'square_avg', 'step'\]",
    ),
    "rmsprop: centered without its average": (
        RMSPROP,
        edit_json(optimizer__param_groups__0__centered=True),
        r"keeps \['grad_avg', 'momentum_buffer', 'square_avg', 'step'\]",
    ),
}


@pytest.fixture(scope="module")
def saved_runs(tmp_path_factory) -> dict[str, Path]:
    """A 2-step run of each optimizer of OTHER_OPTIMIZERS."""
    runs = {}
    for settings in (SGD, RMSPROP):
        run = tmp_path_factory.mktemp("hostile") / settings["optimizer"]
        trainer(run, **settings).fit()
        runs[settings["optimizer"]] = run
    return runs


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_resume_refuses_hostile_training_state(saved_run, tmp_path, case):
    spoil, message = CASES[case]
    refused_untouched(saved_run, tmp_path, spoil, message, {})


@pytest.mark.parametrize("case", OTHER_OPTIMIZERS, ids=list(OTHER_OPTIMIZERS))
def test_resume_refuses_hostile_state_of_other_optimizers(saved_runs, tmp_path, case):
    settings, spoil, message = OTHER_OPTIMIZERS[case]
    refused_untouched(saved_runs[settings["optimizer"]], tmp_path, spoil, message, settings)


def refused_untouched(saved: Path, tmp_path: Path, spoil, message: str, settings) -> None:
    """A copy of ``saved`` spoilt by ``spoil`` is refused with ``message``; nothing is
    restored, nothing runs."""
    run = tmp_path / "run"
    shutil.copytree(saved, run)
    folder = latest_checkpoint(run)
    spoil(folder)
    again = trainer(run, steps=4, **settings)
    before = {k: v.clone() for k, v in again.model.state_dict().items()}
    with pytest.raises(ValueError, match=message) as err:
        again.fit(resume=True)
    assert str(folder) in str(err.value)
    assert again.step == 0  # nothing was restored
    for name, tensor in again.model.state_dict().items():
        assert torch.equal(tensor, before[name]), name
    assert not (tmp_path / "pwned").exists() and not (run / "pwned").exists()
    assert not (run / ".lock").exists()


def test_an_untouched_copy_resumes(saved_run, saved_runs, tmp_path):
    """The control: the same copies, unspoilt, resume to step 4; an AdamW checkpoint whose
    trainer.json names no optimizer is AdamW's."""
    for name, saved, settings in [("adamw", saved_run, {}), ("sgd", saved_runs["sgd"], SGD),
                                  ("rmsprop", saved_runs["rmsprop"], RMSPROP)]:  # fmt: skip
        run = tmp_path / name
        shutil.copytree(saved, run)
        if name == "adamw":
            pop_name(latest_checkpoint(run))
        again = trainer(run, steps=4, **settings)
        again.fit(resume=True)
        assert again.step == 4
