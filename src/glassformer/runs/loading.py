"""What a run loads before its model is built: the data, the tokenizer (trained, read from
the cache, or the checkpoint's or the pre-trained model's) and the model config, checked to fit
the device before anything is allocated (``Run.load()``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..data import TextDataset
from ..models.checkpoint import check_finite, check_vocabulary
from ..models.config import ModelConfig
from ..models.registry import model_class
from ..progress import progress_mode
from ..tasks import TASKS
from ..tokenizers import Tokenizer, load_tokenizer
from .data_identity import check_same_data, data_identity
from .datasets import align_labels, load_splits, train_tokenizer
from .errors import RunError
from .fits import check_fits
from .plan import RunPlan, model_config
from .pretrained import Pretrained, load_start

__all__ = ["Inputs", "load_inputs"]


@dataclass
class Inputs:
    """What ``load_inputs`` loads for a run."""

    train_data: TextDataset
    val_data: TextDataset | None
    tokenizer: Tokenizer
    model_config: ModelConfig
    architecture: type
    pretrained: Pretrained | None = None  # the model a new run starts from (init_from)


def load_inputs(
    plan: RunPlan,
    config: ModelConfig | None,
    checkpoint: Path | None,
    *,
    resumed: bool = False,
    data_changed_ok: bool = False,
    progress: bool | str = False,
) -> Inputs:
    """The data, tokenizer, model config and class of the run ``plan`` (``config``: a resumed
    run's own; ``checkpoint``: the one it continues from); ``progress`` (False, "lines" or
    "bar") shows the tokenizer's training (under torchrun, in the first process only)."""
    pretrained = None
    if plan.train.steps == 0:
        raise RunError(
            "train.steps=0 trains nothing; nothing was written; give train.steps=N with N >= 1",
            names=["train.steps"],
        )
    train_data, val_data = load_splits(plan)
    identity = data_identity(plan, train_data, val_data)
    if resumed:
        check_same_data(plan, identity, accept=data_changed_ok)
    plan.data_identity = identity  # recorded in run.json
    ckpt = checkpoint
    if ckpt is not None:
        tokenizer = load_tokenizer(ckpt / "tokenizer.json")
    elif plan.init_from is not None:  # the pre-trained model's tokenizer and config
        overrides, labels = plan.model_overrides, train_data.labels
        pretrained = load_start(plan.init_from, plan.task, overrides, labels)
        _check_finite(pretrained)
        tokenizer = pretrained.tokenizer
        config = config or pretrained.config
    else:
        shown = progress_mode(progress) if int(os.environ.get("RANK", "0")) == 0 else "none"
        tokenizer = train_tokenizer(plan, train_data, shown)
    if config is None:
        vocab, labels = tokenizer.vocab_size, train_data.labels
        config = model_config(plan, vocab, labels)
    classes = config.extra.get("labels")
    if train_data.labels and classes:  # class indices in the model's order
        train_data = align_labels(train_data, tuple(classes))
        if val_data is not None:
            val_data = align_labels(val_data, tuple(classes))
    if ckpt is not None:  # resuming: the run's config and the checkpoint's tokenizer
        check_vocabulary(tokenizer, config, where=str(ckpt / "tokenizer.json"))
    task, family = TASKS[plan.task], config.family  # a decoder's classifier too
    architecture = model_class(task.families.get(family, task.model_class))
    check_fits(plan, config, architecture)
    return Inputs(train_data, val_data, tokenizer, config, architecture, pretrained)


def _check_finite(pretrained) -> None:
    """Weights holding NaN or infinite values are refused before anything is written: no
    learning rate trains from them (a glassformer checkpoint's are checked when read, a
    Hugging Face folder's here, by the names of the model they were read into)."""
    for name, tensor in pretrained.model.state_dict().items():
        try:
            check_finite(tensor, f"init_from {pretrained.path}: tensor {name!r}")
        except ValueError as err:
            raise RunError(str(err), argument="init_from") from None
