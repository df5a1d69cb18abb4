"""A run that diverges: a training loss, validation loss or weights that are not finite stop it
with ``DivergedError`` naming the step, the value and what to try, and where the last good
checkpoint is (or that there is none); nothing of that step is saved, no NaN is ever the best
loss, and metrics.jsonl stays strict JSON (``null`` for a number that is not finite). Weights
that are not finite before the first step are refused, not blamed on the learning rate."""

import json

import pytest
import torch

from glassformer import DecoderLM, preset
from glassformer.data import load_dataset
from glassformer.tokenizers import CharTokenizer
from glassformer.training import DivergedError, TrainConfig, Trainer, TrainingError
from glassformer.training.state import checkpoints

TEXT = load_dataset("shakespeare", "validation")
TOK = CharTokenizer().train(TEXT.texts())
SMALL = dict(vocab_size=TOK.vocab_size, d_model=32, n_head=4, n_layer=1, max_len=32)


def make(run_dir, validation=TEXT, **overrides):
    torch.manual_seed(0)
    model = DecoderLM(preset("tiny", **SMALL))
    settings = dict(
        steps=8, batch_size=4, lr=1e-3, warmup=0, eval_every=4, eval_batches=1, save_every=4
    )
    cfg = TrainConfig(**{**settings, **overrides})
    return Trainer(model, TOK, TEXT, validation, cfg, run_dir, progress=False)


def records(run_dir):
    """metrics.jsonl, read strictly: a bare NaN or Infinity is an error."""

    def refuse(word):
        raise ValueError(f"{word} is not JSON")

    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line, parse_constant=refuse) for line in lines]


def poison_before_step(trainer, n):
    """Put a NaN in a weight just before step ``n`` is trained."""
    step = trainer.train_step

    def poisoned():
        if trainer.step == n - 1:
            with torch.no_grad():
                trainer.model.blocks[0].mlp.fc1.weight[0, 0] = float("nan")
        return step()

    trainer.train_step = poisoned


def test_a_nan_training_loss_names_the_step_and_the_last_good_checkpoint(tmp_path):
    trainer = make(tmp_path)
    poison_before_step(trainer, 6)
    with pytest.raises(DivergedError) as err:
        trainer.fit()
    last = tmp_path / "checkpoints" / "step-000004"
    assert str(err.value) == (
        "step 6: the training loss is nan; lower train.lr (it is 0.001; e.g. "
        f"train.lr=0.0001); the last good checkpoint is {last}"
    )
    assert isinstance(err.value, TrainingError) and err.value.step == 6
    assert [p.name for p in checkpoints(tmp_path)] == ["step-000004"]
    assert trainer.best["step"] == 4
    assert records(tmp_path)[-1] == {"step": 6, "event": "diverged"}


def test_divergence_before_the_first_checkpoint_says_there_is_none(tmp_path):
    trainer = make(tmp_path, grad_clip=0.0)
    poison_before_step(trainer, 2)
    with pytest.raises(DivergedError) as err:
        trainer.fit()
    assert str(err.value) == (
        "step 2: the training loss is nan; lower train.lr (it is 0.001; e.g. "
        "train.lr=0.0001) or clip gradients (train.grad_clip=1.0); the run stopped "
        f"before its first checkpoint: {tmp_path} holds none"
    )
    assert checkpoints(tmp_path) == []


def test_a_nan_validation_loss_is_never_the_best_and_never_saved(tmp_path):
    """The update of step 4 leaves weights whose validation loss is NaN: the run stops
    before saving step 4, and metrics.jsonl writes the NaN as null."""
    trainer = make(tmp_path, eval_every=2, save_every=2)
    step = trainer.train_step

    def huge_update():
        out = step()
        if trainer.step == 3:  # step 4 is being trained
            with torch.no_grad():
                trainer.model.blocks[0].mlp.fc1.weight.mul_(1e38)
        return out

    trainer.train_step = huge_update
    with pytest.raises(DivergedError, match=r"^step 4: the validation loss is nan after the "):
        trainer.fit()
    assert [p.name for p in checkpoints(tmp_path)] == ["step-000002"]
    assert trainer.best["step"] == 2
    got = records(tmp_path)
    assert got[-2] == {"step": 4, "val_loss": None, "val_perplexity": got[-2]["val_perplexity"]}
    assert got[-1] == {"step": 4, "event": "diverged"}
    saved = json.loads((tmp_path / "checkpoints" / "step-000002" / "trainer.json").read_text())
    assert saved["best"] == {"step": 2, "loss": trainer.best["loss"]}


def test_weights_an_update_made_infinite_are_never_saved(tmp_path):
    """Without validation data, the checkpoint of a step whose update left infinite
    weights is not written."""
    trainer = make(tmp_path, validation=None, steps=4, save_every=2)
    step = trainer.train_step

    def overflowing_update():
        out = step()
        if trainer.step == 3:
            with torch.no_grad():
                trainer.model.blocks[0].mlp.fc2.weight[1, 2] = float("inf")
        return out

    trainer.train_step = overflowing_update
    with pytest.raises(DivergedError) as err:
        trainer.fit()
    assert str(err.value).startswith(
        "step 4: the step's update left NaN or infinite values in blocks.0.mlp.fc2.weight; "
        "lower train.lr (it is 0.001; e.g. train.lr=0.0001); the last good checkpoint "
    )
    assert [p.name for p in checkpoints(tmp_path)] == ["step-000002"]


def test_weights_that_are_not_finite_before_training_are_refused(tmp_path):
    trainer = make(tmp_path / "run")
    with torch.no_grad():
        trainer.model.blocks[0].attn.out_proj.weight[3, 1] = float("nan")
    with pytest.raises(ValueError) as err:
        trainer.fit()
    assert str(err.value) == (
        "the model's weights hold NaN or infinite values before step 1 (parameter "
        "'blocks.0.attn.out_proj.weight'); training cannot start from them, whatever the "
        "learning rate: start from weights that are finite"
    )
    assert not (tmp_path / "run").exists()  # nothing written
