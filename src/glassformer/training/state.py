"""Training checkpoints: everything needed to continue a run exactly.

    <run>/checkpoints/step-000500/
        model.safetensors, config.json, tokenizer.json   (a loadable model, see models/)
        trainer.safetensors   optimizer state by parameter name, RNG states (tensors only)
        trainer.json          step, optimizer name and hyper-parameters, scheduler, metrics

A run with LoRA (train.lora_rank > 0) saves its model as it is: the plain model's names with
each adapted Linear's unmerged W, plus its ``lora_A`` and ``lora_B``, and config.json records
the adapters, so every command loads the same model (models/checkpoint.py). A checkpoint of
the earlier LoRA layout (the merged model plus ``lora.safetensors``, models/legacy_keys.py)
resumes too. Frozen parameters have no optimizer state; they are saved with the model.

A checkpoint is written into a hidden temporary folder and renamed into place when complete,
so a crash or a kill at any moment leaves the previous checkpoints intact and never a partial
one under a ``step-*`` name. A disk that fills up during the write is the same: the temporary
folder is removed and ``DiskFullError`` says how much room the checkpoint needs and how much
is free. Nothing is unpickled when loading.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

from ..finetune import lora_layers
from ..machine import format_bytes
from ..models import GlassformerModel
from ..models.legacy_keys import FUSED, LEGACY_LORA_FILE
from ..safe_write import replace_dir, replace_file, write_text
from ..structured import loads_json
from .errors import DiskFullError
from .layout import (
    CHECKPOINTS,
    PREFIX,
    best_or_latest,
    checkpoints,
    latest_checkpoint,
    prune,
    remove_partial_checkpoints,
)
from .optim import optimizer_name
from .optimizer_state import (
    current_parameter_names,
    load_param_groups,
    optimizer_state,
    optimizer_tensors,
)
from .state_check import check_training_state

__all__ = [
    "best_or_latest",
    "checkpoints",
    "latest_checkpoint",
    "load_checkpoint",
    "prune",
    "remove_partial_checkpoints",
    "save_checkpoint",
]


def _state_dicts():
    """torch.distributed.checkpoint's state-dict functions and the options that ask for full
    (unsharded) tensors keyed by parameter name: the same checkpoint for 1 process, DDP and
    FSDP. Imported on first use: the import takes a second or more, which ``glassformer
    --help`` and a mistyped option should not wait for."""
    from torch.distributed.checkpoint import state_dict

    return state_dict, state_dict.StateDictOptions(full_state_dict=True, cpu_offload=True)


def save_checkpoint(
    run_dir: Path,
    step: int,
    model: GlassformerModel,
    optimizer: torch.optim.Optimizer,
    scheduler,
    state: dict[str, Any],
    tokenizer=None,
    *,
    write: bool = True,
) -> Path:
    """Gather the full state (a collective call in a distributed run: every process calls
    it) and, where ``write``, write it."""
    dcp, full = _state_dicts()
    model_sd, optim_sd = dcp.get_state_dict(model, optimizer, options=full)
    ckpt_root = Path(run_dir) / CHECKPOINTS
    final = ckpt_root / f"{PREFIX}{step:06d}"
    if not write:
        return final
    ckpt_root.mkdir(parents=True, exist_ok=True)
    tensors, opt_meta = optimizer_tensors(optim_sd)
    opt_meta["name"] = optimizer_name(optimizer)
    tensors["rng.cpu"] = torch.get_rng_state()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        tensors["rng.cuda"] = torch.cuda.get_rng_state()

    def fill(tmp: Path) -> None:
        model.save_pretrained(tmp, tokenizer, state_dict=model_sd)
        replace_file(tmp / "trainer.safetensors", lambda p: save_file(tensors, p))
        meta = {"step": step, "optimizer": opt_meta, "scheduler": scheduler.state_dict(), **state}
        write_text(tmp / "trainer.json", json.dumps(meta, indent=2, default=_jsonable))

    try:
        replace_dir(final, fill)  # a folder already there is replaced (final == periodic)
    except (OSError, SafetensorError) as err:
        code = _no_space(err)
        if code is None:
            raise
        needed = _nbytes([*model_sd.values(), *tensors.values()])
        free = shutil.disk_usage(ckpt_root).free
        kept = latest_checkpoint(run_dir)
        before = "none was saved before it" if kept is None else f"{kept.name} is intact"
        raise DiskFullError(
            f"checkpoint {final.name} could not be saved in {ckpt_root}: "
            f"{os.strerror(code).lower()} (it needs about {format_bytes(needed)}, "
            f"{format_bytes(free)} is free); nothing of it was left there, {before}",
            ckpt_root,
            needed,
            free,
        ) from None
    return final


def _no_space(err: BaseException) -> int | None:
    """ENOSPC or EDQUOT when ``err`` says the disk (or the user's quota) is full, else None.
    Python's own writes raise an OSError with its errno; safetensors (0.4 to 0.8) raises a
    ``SafetensorError`` whose message ends in the system's words and number, e.g. ``I/O
    error: No space left on device (os error 28)``."""
    full = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))
    if isinstance(err, OSError):
        return err.errno if err.errno in full else None
    found = re.search(r"\(os error (\d+)\)", str(err))
    if found and int(found.group(1)) in full:
        return int(found.group(1))
    return errno.ENOSPC if os.strerror(errno.ENOSPC) in str(err) else None


def _nbytes(tensors: list[torch.Tensor]) -> int:
    """The bytes of ``tensors``, memory met twice (tied weights) counted once."""
    seen = {(t.data_ptr(), t.numel(), t.dtype): t for t in tensors}
    return sum(t.numel() * t.element_size() for t in seen.values())


def load_checkpoint(
    path: Path, model: GlassformerModel, optimizer: torch.optim.Optimizer, scheduler
) -> dict[str, Any]:
    """Restore model weights, optimizer, scheduler and RNG (every process of a distributed
    run calls it); return the saved state dict."""
    from ..models.checkpoint import WEIGHTS_FILE, check_finite, read_weights

    path = Path(path)
    weights = _read_model(model, path, WEIGHTS_FILE, read_weights)
    meta = _read(path / "trainer.json", lambda f: loads_json(f.read_bytes(), "trainer.json"))
    tensors = _read(path / "trainer.safetensors", load_file)
    for name, tensor in tensors.items():  # NaN first, then the ranges of what is finite
        where = f"{path / 'trainer.safetensors'}: tensor {name!r}"
        check_finite(tensor, where, "the optimizer's state is")
    try:
        current_parameter_names(meta, tensors, model)
    except ValueError as err:
        raise ValueError(f"{path / 'trainer.json'}: {err}") from None
    check_training_state(path, meta, tensors, model, optimizer, scheduler)
    try:
        optim_sd = optimizer_state(meta["optimizer"], tensors)
        dcp, full = _state_dicts()
        weights = {**weights, **_shared_aliases(model)}
        if optim_sd["state"]:
            dcp.set_state_dict(
                model, optimizer, model_state_dict=weights, optim_state_dict=optim_sd, options=full
            )
        else:  # an optimizer that keeps no state (SGD without momentum): dcp cannot load it
            dcp.set_model_state_dict(model, weights, options=full)
            load_param_groups(model, optimizer, optim_sd["param_groups"])
        scheduler.load_state_dict(meta["scheduler"])
        torch.set_rng_state(tensors["rng.cpu"])
    except (RuntimeError, ValueError, KeyError, TypeError, IndexError) as err:
        raise ValueError(f"{path}: training state does not fit this run ({err})") from None
    if "rng.cuda" in tensors and torch.cuda.is_available():
        torch.cuda.set_rng_state(tensors["rng.cuda"])
    return meta


def _read_model(model: GlassformerModel, path: Path, weights_file: str, read_weights):
    """The model's tensors from the checkpoint ``path``. In the earlier LoRA layout
    (``LEGACY_LORA_FILE`` beside the merged model), each adapted Linear's W, A and B come from
    that file, the rest from model.safetensors."""
    legacy = path / LEGACY_LORA_FILE
    layers = lora_layers(model)
    if not (layers and legacy.is_file()):
        return read_weights(model, path / weights_file)
    with safe_open(legacy, framework="pt") as f:
        fused = [k for k in f.keys() if f".{FUSED}.lora_" in k]  # noqa: SIM118 (safe_open)
    if fused:  # one A for [W^Q; W^K; W^V]: three adapters with an A each train otherwise
        raise ValueError(
            f"{legacy}: {fused[0]!r} is an adapter of the fused attention projection in_proj "
            "([W^Q; W^K; W^V], one A for the three), which models hold as q_proj, k_proj, "
            "v_proj with an adapter each: the run cannot resume exactly. model.safetensors "
            "(the merged weights) loads: start a new run from it (init_from)"
        )
    adapters = {f"{p}.{name}" for p in layers for name in ("lora_A", "lora_B")}
    plain = set(model.state_dict()) - adapters  # each adapted W merged there: replaced below
    weights = read_weights(model, path / weights_file, only=plain)
    adapted = adapters | {f"{p}.weight" for p in layers}
    return {**weights, **read_weights(model, legacy, only=adapted)}


def _shared_aliases(model: GlassformerModel) -> dict[str, torch.Tensor]:
    """The model's own tensors under the names of a module met a second time (an
    encoder-decoder's shared embedding: ``decoder.embed`` is ``encoder.embed``).
    torch.distributed.checkpoint loads each module once, under its first name, and leaves a
    full tensor under the second, which an FSDP-sharded parameter cannot take; the model's
    own tensor there copies onto itself after the first name has loaded it."""
    first = {name for name, _ in model.named_modules()}  # each module once, first name
    live = model.state_dict(keep_vars=True)
    return {k: v for k, v in live.items() if k.rpartition(".")[0] not in first}


def _read(file: Path, reader: Callable[[Path], Any]) -> Any:
    try:
        return reader(file)
    except (OSError, ValueError, SafetensorError) as err:
        raise ValueError(f"{file}: unreadable training state ({err})") from None


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple | set):
        return list(value)
    if torch.is_tensor(value):
        return value.tolist()
    raise TypeError(f"cannot store {type(value).__name__} in trainer.json")
