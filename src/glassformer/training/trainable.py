"""What a run trains, from its settings (glassformer/finetune/ does the work):

    model.embeddings = "fixed"   the token, learned position and segment embeddings stay
    train.lora_rank > 0          LoRA adapters on train.lora_targets; every other parameter
                                 stays, except a classifier's head (``classifier``), which a
                                 fine-tuned classifier needs to learn (as PEFT keeps it)
    train.freeze                 the parts named stay

The optimizer then takes only the parameters that train (optim.py), so the frozen ones have
no optimizer state and keep their values exactly.
"""

from __future__ import annotations

from torch import nn

from ..finetune import apply_lora, fix_embeddings, freeze, trainable_count
from .config import TrainConfig

__all__ = ["HEADS", "set_what_trains"]

HEADS = ("classifier",)  # parts that keep training under LoRA


def set_what_trains(model: nn.Module, config: TrainConfig) -> tuple[int, int]:
    """Fix, wrap and freeze ``model`` as ``config`` (and its ModelConfig) say; (parameters
    that train, all parameters). ``ValueError`` when a setting names no part of the model,
    or when nothing would train."""
    if getattr(getattr(model, "config", None), "embeddings", "learned") == "fixed":
        fix_embeddings(model)
    if config.lora_rank:
        keep = [name for name in HEADS if isinstance(getattr(model, name, None), nn.Module)]
        apply_lora(
            model,
            config.lora_targets,
            config.lora_rank,
            config.lora_alpha,
            config.lora_dropout,
            keep=keep,
            where="train.lora_targets",
            rank_name="train.lora_rank",
        )
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
