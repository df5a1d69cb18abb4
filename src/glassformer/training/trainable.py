"""What a run trains, from its settings (glassformer/finetune/ does the work):

    train.lora_rank > 0          LoRA adapters on train.lora_targets, added where the model
                                 is built (``add_run_lora``, which ``Run.build`` calls); every
                                 other parameter stays, except a classifier's head
                                 (``classifier``), which a fine-tuned classifier needs to learn
                                 (as PEFT keeps it)
    model.embeddings = "fixed"   the token, learned position and segment embeddings stay
    train.freeze                 the parts named stay

The Trainer calls ``set_what_trains`` for the last two; the optimizer then takes only the
parameters that train (optim.py), so the frozen ones have no optimizer state and keep their
values exactly.
"""

from __future__ import annotations

from torch import nn

from ..finetune import add_lora, fix_embeddings, freeze, lora_layers, trainable_count
from .config import TrainConfig

__all__ = ["HEADS", "add_run_lora", "set_what_trains"]

HEADS = ("classifier",)  # parts that keep training under LoRA


def add_run_lora(model: nn.Module, config: TrainConfig) -> nn.Module:
    """``model`` with the LoRA adapters ``config`` asks for (train.lora_rank > 0; else as it
    is): ``add_lora`` on train.lora_targets with train.lora_rank, lora_alpha and lora_dropout,
    a classifier's head kept training."""
    if not config.lora_rank:
        return model
    keep = [name for name in HEADS if isinstance(getattr(model, name, None), nn.Module)]
    return add_lora(
        model,
        config.lora_targets,
        config.lora_rank,
        config.lora_alpha,
        config.lora_dropout,
        keep=keep,
        where="train.lora_targets",
        rank_name="train.lora_rank",
    )


def set_what_trains(model: nn.Module, config: TrainConfig) -> tuple[int, int]:
    """Fix and freeze ``model`` as ``config`` (and its ModelConfig) say; (parameters that
    train, all parameters). ``ValueError`` when a setting names no part of the model, when
    nothing would train, or when train.lora_rank asks for LoRA layers the model lacks
    (``add_run_lora`` adds them)."""
    _check_lora_layers(model, config)
    if getattr(getattr(model, "config", None), "embeddings", "learned") == "fixed":
        fix_embeddings(model)
    if config.freeze:
        freeze(model, config.freeze, where="train.freeze")
    trained, total = trainable_count(model)
    if not trained:
        raise ValueError(
            f"nothing trains: train.freeze={config.freeze!r}"
            f"{' and model.embeddings=fixed' if model.config.embeddings == 'fixed' else ''} "
            "leave no parameter of the model to train; freeze fewer parts"
        )
    return trained, total


def _check_lora_layers(model: nn.Module, config: TrainConfig) -> None:
    """The model's LoRA layers are of train.lora_rank (none when it is 0)."""
    ranks = sorted({m.rank for m in lora_layers(model).values()})
    want = [config.lora_rank] if config.lora_rank else []
    if ranks != want:
        has = f"LoRA layers of rank {', '.join(map(str, ranks))}" if ranks else "no LoRA layers"
        raise ValueError(
            f"train.lora_rank={config.lora_rank} but the model has {has}: add them where the "
            "model is built, with glassformer.finetune.add_lora (Run.build adds "
            "train.lora_rank's), or set train.lora_rank to the model's"
        )
