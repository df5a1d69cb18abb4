"""train.optimizer: AdamW, Adam, SGD and RMSprop (training/optim.py) update the weights as
torch.optim's classes do, decay only the matrices, leave alone what does not train, save and
resume exactly, and refuse settings they do not take. (The kill test of an SGD run is in
test_kill.py; hostile SGD and RMSprop state in test_hostile_state.py.)"""

from __future__ import annotations

import copy

import pytest
import torch
from safetensors.torch import load_file

from glassformer import DecoderLM, preset
from glassformer.data import TextDataset
from glassformer.runs import Run, RunError
from glassformer.tokenizers import CharTokenizer
from glassformer.training import TrainConfig, Trainer, build_optimizer, build_scheduler

TEXTS = ["the cat sat on the mat."] * 8
TOK = CharTokenizer().train(TEXTS)
DATA = TextDataset("cats", "lm", "train", TEXTS)

# TrainConfig settings -> the torch.optim class and keywords that must give the same weights
SETTINGS = {
    "adamw": ({}, torch.optim.AdamW, {"betas": (0.9, 0.99), "eps": 1e-8}),
    "adam": (
        {"optimizer": "adam", "beta1": 0.8, "eps": 1e-6},
        torch.optim.Adam,
        {"betas": (0.8, 0.99), "eps": 1e-6},
    ),
    "sgd": ({"optimizer": "sgd"}, torch.optim.SGD, {"momentum": 0.9}),
    "sgd nesterov": (
        {"optimizer": "sgd", "momentum": 0.5, "nesterov": True},
        torch.optim.SGD,
        {"momentum": 0.5, "nesterov": True},
    ),
    "sgd no momentum": ({"optimizer": "sgd", "momentum": 0.0}, torch.optim.SGD, {}),
    "rmsprop": ({"optimizer": "rmsprop"}, torch.optim.RMSprop, {"alpha": 0.99, "eps": 1e-8}),
    "rmsprop momentum": (
        {"optimizer": "rmsprop", "momentum": 0.5, "alpha": 0.9, "eps": 1e-7},
        torch.optim.RMSprop,
        {"momentum": 0.5, "alpha": 0.9, "eps": 1e-7},
    ),
}


def tiny_model() -> DecoderLM:
    torch.manual_seed(0)
    return DecoderLM(preset("tiny", vocab_size=TOK.vocab_size, d_model=16, n_head=2, n_layer=1))


@pytest.mark.parametrize("case", SETTINGS, ids=list(SETTINGS))
def test_each_optimizer_updates_the_weights_as_torch_optim_does(case):
    settings, cls, keywords = SETTINGS[case]
    config = TrainConfig(lr=1e-2, weight_decay=0.1, **settings)
    ours = tiny_model()
    ours.pos_embed.weight.requires_grad_(False)  # what does not train is left out
    theirs = copy.deepcopy(ours)
    optimizer = build_optimizer(ours, config)
    assert type(optimizer) is cls
    trained = [p for p in theirs.parameters() if p.requires_grad]
    fused = cls is not torch.optim.RMSprop  # PyTorch's fused kernel on a CPU, as ours uses
    assert optimizer.defaults.get("fused", False) is fused
    reference = cls(
        [
            {"params": [p for p in trained if p.dim() >= 2], "weight_decay": 0.1},
            {"params": [p for p in trained if p.dim() < 2], "weight_decay": 0.0},
        ],
        lr=1e-2,
        **keywords,
        **({"fused": True} if fused else {}),
    )
    listed = {id(p) for g in optimizer.param_groups for p in g["params"]}
    assert id(ours.pos_embed.weight) not in listed and len(listed) == len(trained)
    frozen = ours.pos_embed.weight.clone()
    gen = torch.Generator().manual_seed(1)
    for _ in range(5):  # the same gradients for both
        for p, q in zip(ours.parameters(), theirs.parameters(), strict=True):
            if p.requires_grad:
                p.grad = torch.randn(p.shape, generator=gen)
                q.grad = p.grad.clone()
        optimizer.step()
        reference.step()
    assert torch.equal(ours.pos_embed.weight, frozen)
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters(), strict=True):
        assert torch.equal(p, q), name
    moved = (ours.blocks[0].attn.q_proj.weight - tiny_model().blocks[0].attn.q_proj.weight)
    assert moved.abs().max() > 1e-3  # the steps did change the weights


def test_weight_decay_is_on_the_matrices_only():
    optimizer = build_optimizer(tiny_model(), TrainConfig(optimizer="rmsprop", weight_decay=0.3))
    decay, no_decay = optimizer.param_groups
    assert decay["weight_decay"] == 0.3 and no_decay["weight_decay"] == 0.0
    assert all(p.dim() >= 2 for p in decay["params"])
    assert all(p.dim() < 2 for p in no_decay["params"]) and no_decay["params"]


def trainer(run_dir, steps: int, **settings) -> Trainer:
    config = TrainConfig(
        task="lm", steps=steps, batch_size=2, save_every=2, log_every=1, lr=1e-2, **settings
    )
    return Trainer(tiny_model(), TOK, DATA, None, config, run_dir, progress=False)


@pytest.mark.parametrize("case", SETTINGS, ids=list(SETTINGS))
def test_a_resumed_run_ends_with_the_weights_of_an_uninterrupted_one(tmp_path, case):
    settings = SETTINGS[case][0]
    whole = trainer(tmp_path / "whole", 4, **settings)
    whole.fit()
    trainer(tmp_path / "cut", 2, **settings).fit()
    again = trainer(tmp_path / "cut", 4, **settings)
    again.fit(resume=True)
    assert again.step == 4
    for (name, p), q in zip(
        again.model.named_parameters(), whole.model.parameters(), strict=True
    ):
        assert torch.equal(p, q), name


def test_resuming_with_another_optimizer_is_refused_naming_both(tmp_path):
    trainer(tmp_path / "run", 2, optimizer="sgd").fit()
    again = trainer(tmp_path / "run", 4, optimizer="adam")
    with pytest.raises(ValueError) as err:
        again.fit(resume=True)
    message = str(err.value)
    assert "trainer.json: the checkpoint was trained with the optimizer sgd, this run " in message
    assert "uses adam; resume with train.optimizer=sgd, or start a new run" in message
    assert again.step == 0 and "\n" not in message


def test_a_run_resumed_with_another_optimizer_setting_is_refused(tmp_path):
    tiny = {
        "model": {"d_model": 16, "n_layer": 1, "n_head": 2, "max_len": 16},
        "train": {"batch_size": 2, "optimizer": "sgd", "momentum": 0.8, "eval_batches": 1},
        "sample": {"max_new_tokens": 0},
    }
    (tmp_path / "cats.txt").write_text("the cat sat on the mat.\n" * 20)
    run = Run.plan(data=str(tmp_path / "cats.txt"), out=tmp_path / "run", steps=2, settings=tiny)
    run.train()
    assert type(run.trainer.optimizer) is torch.optim.SGD
    assert run.trainer.optimizer.defaults["momentum"] == 0.8
    # rmsprop takes a momentum; adam does not, which is not what the message is about
    for other in ("rmsprop", "adam"):
        with pytest.raises(RunError) as err:
            Run.resume(tmp_path / "run", settings={"train": {"optimizer": other}})
        assert f"with train.optimizer='sgd', but the options give '{other}'" in str(err.value)


BAD = {
    "unknown optimizer": (
        {"optimizer": "lion"},
        "optimizer='lion' is not known; choose one of ('adamw', 'adam', 'sgd', 'rmsprop')",
    ),
    "momentum 1": ({"optimizer": "sgd", "momentum": 1.0}, "momentum=1.0 is over the limit"),
    "momentum negative": ({"optimizer": "sgd", "momentum": -0.1}, "momentum=-0.1 must be"),
    "momentum NaN": ({"optimizer": "rmsprop", "momentum": float("nan")}, "momentum=nan must"),
    "momentum for adamw": (
        {"momentum": 0.9},
        "momentum=0.9 applies to the optimizers sgd and rmsprop, not adamw (its momentum is "
        "beta1)",
    ),
    "nesterov for rmsprop": (
        {"optimizer": "rmsprop", "nesterov": True},
        "nesterov=True applies to the optimizer sgd only, not rmsprop",
    ),
    "nesterov without momentum": (
        {"optimizer": "sgd", "momentum": 0.0, "nesterov": True},
        "nesterov=True needs momentum > 0, got momentum=0.0",
    ),
    "nesterov a string": ({"optimizer": "sgd", "nesterov": "yes"}, "nesterov='yes' must be"),
    "eps 0": ({"eps": 0.0}, "eps=0.0 must be a finite number > 0"),
    "alpha 1": ({"optimizer": "rmsprop", "alpha": 1.0}, "alpha=1.0 is over the limit"),
    "alpha a string": ({"optimizer": "rmsprop", "alpha": "0.9"}, "alpha='0.9' must be"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_bad_optimizer_settings_are_refused(case):
    settings, message = BAD[case]
    with pytest.raises(ValueError) as err:
        TrainConfig(**settings)
    assert message in str(err.value)


@pytest.mark.parametrize("optimizer", ["adamw", "sgd", "rmsprop"])
def test_a_parameter_that_does_not_train_keeps_its_value_and_no_state(tmp_path, optimizer):
    """It is left out of the optimizer, its checkpoint state and the checks of a resume,
    which continues as an uninterrupted run."""

    def frozen(run_dir, steps: int) -> Trainer:
        t = trainer(run_dir, steps, optimizer=optimizer)
        t.model.pos_embed.weight.requires_grad_(False)
        t.optimizer = build_optimizer(t.model, t.config)
        t.scheduler = build_scheduler(t.optimizer, t.config)
        return t

    whole = frozen(tmp_path / "whole", 4)
    before = whole.model.pos_embed.weight.clone()
    whole.fit()
    assert torch.equal(whole.model.pos_embed.weight, before)
    frozen(tmp_path / "cut", 2).fit()
    saved = load_file(tmp_path / "cut" / "checkpoints" / "step-000002" / "trainer.safetensors")
    assert not [k for k in saved if k.startswith("opt/pos_embed.")]
    assert [k for k in saved if k.startswith("opt/embed.")]  # what trains has its state
    again = frozen(tmp_path / "cut", 4)
    again.fit(resume=True)
    for (name, p), q in zip(
        again.model.named_parameters(), whole.model.parameters(), strict=True
    ):
        assert torch.equal(p, q), name
