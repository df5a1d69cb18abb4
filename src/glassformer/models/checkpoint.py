"""Checkpoints: ``model.safetensors`` (weights) + ``config.json`` (architecture and config)
+ ``tokenizer.json`` when a tokenizer is attached. A model with LoRA layers (nn/lora.py) is
saved as it is: its weights under the plain model's names plus each layer's ``lora_A`` and
``lora_B``, and config.json's ``lora`` entry (the adapted paths, rank, alpha, dropout), from
which loading adds the same layers before it reads the weights. Safetensors holds raw tensors
only, so loading never runs code from a file (no pickle). Each file is written to a temporary
name and renamed, so a crash leaves either the old file or the new one, never half of one.

Loading checks before it allocates: the config (sizes within limits, and a model that fits
this machine's memory, budget.py) and the tokenizer (no id past the model's vocabulary); then
every weight as it is read: name, shape and dtype against the model, and no NaN or infinite
value (a run that diverged, or a damaged file, would otherwise end in NaN logits).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from ..nn.lora import adapt, adapters
from ..safe_write import replace_file, write_text
from ..structured import loads_json
from .budget import check_memory
from .config import ModelConfig
from .legacy_keys import current_names, fused_rows
from .registry import model_class

__all__ = [
    "CONFIG_FILE",
    "TOKENIZER_FILE",
    "WEIGHTS_FILE",
    "check_finite",
    "check_vocabulary",
    "load_pretrained",
    "read_weights",
    "save_pretrained",
]


class Checkpointable(Protocol):
    """What a checkpoint reads and writes of a model: a ``GlassformerModel`` (models/base.py,
    which calls this module and so is not imported by it)."""

    config: ModelConfig
    tokenizer: Any

    def architecture(self) -> str: ...

    def state_dict(self, *, keep_vars: bool = False) -> dict[str, Any]: ...


WEIGHTS_FILE, CONFIG_FILE, TOKENIZER_FILE = "model.safetensors", "config.json", "tokenizer.json"
FORMAT = "glassformer-model"


def save_pretrained(
    model: Checkpointable,
    directory: str | Path,
    tokenizer=None,
    state_dict: dict[str, torch.Tensor] | None = None,
) -> Path:
    """``state_dict``: full tensors to write instead of the model's own (e.g. gathered from
    the shards of a distributed run)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tensors = _unique_tensors(model)
    if state_dict is not None:
        tensors = {name: state_dict[name].detach().contiguous().cpu() for name in tensors}
    replace_file(
        directory / WEIGHTS_FILE, lambda p: save_file(tensors, p, metadata={"format": "pt"})
    )
    meta = {
        "format": FORMAT,
        "version": 1,
        "architecture": model.architecture(),
        "config": model.config.to_dict(),
    }
    lora = adapters(model)
    if lora is not None:
        meta["lora"] = lora
    text = json.dumps(meta, indent=2, sort_keys=True) + "\n"
    write_text(directory / CONFIG_FILE, text)
    tokenizer = tokenizer if tokenizer is not None else getattr(model, "tokenizer", None)
    if tokenizer is not None:
        tokenizer.save(directory / TOKENIZER_FILE)
    return directory


def load_pretrained(directory: str | Path, *, device=None) -> Checkpointable:
    """The model saved in the checkpoint folder ``directory`` (config.json, model.safetensors,
    tokenizer.json when there is one). A run folder of ``glassformer train``, which holds
    checkpoints, is read by ``glassformer.load_model``."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ValueError(f"{directory}: not a checkpoint directory (no such directory)")
    cls, config = read_config(directory / CONFIG_FILE)
    tokenizer = read_tokenizer(directory / TOKENIZER_FILE, config)
    try:
        check_memory(config, cls, device=device)
    except ValueError as err:
        raise ValueError(f"{directory / CONFIG_FILE}: {err}") from None
    with torch.device(device or "cpu"):
        model = cls(config)
        _add_adapters(model, directory / CONFIG_FILE)
    load_weights(model, directory / WEIGHTS_FILE)
    model.tokenizer = tokenizer
    return model


def read_tokenizer(path: Path, config: ModelConfig):
    """The tokenizer saved beside a model (None if there is none), refused when it has ids
    past the model's vocabulary: they would have no row in the embedding. A smaller
    tokenizer is fine (a vocabulary padded to a round size has rows no id uses)."""
    if not path.exists():
        return None
    from ..tokenizers import load_tokenizer

    try:
        tokenizer = load_tokenizer(path)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    check_vocabulary(tokenizer, config, where=str(path))
    return tokenizer


def check_vocabulary(tokenizer, config: ModelConfig, where: str = "the tokenizer") -> None:
    """Refuse a tokenizer with more ids than the model's vocabulary (vocab_size, and for an
    encoder-decoder also the target's, tgt_vocab_size), naming both sizes. A Hugging Face
    tokenizer counts the ids its file defines (``file_vocab_size``): a role it lacks, such as
    GPT-2's <MASK>, gets an id past them that no text encodes to."""
    n = tokenizer.file_vocab_size
    sizes = {"vocab_size": config.vocab_size}
    if config.family == "encoder-decoder" and config.tgt_vocab_size is not None:
        sizes["tgt_vocab_size"] = config.tgt_vocab_size
    for name, size in sizes.items():
        if n > size:
            raise ValueError(
                f"{where} has {n} tokens but the model's vocabulary ({name}) is {size}; ids "
                f"{size} .. {n - 1} have no embedding: use the tokenizer the model was trained "
                "with"
            )


def read_config(path: Path) -> tuple[type[Checkpointable], ModelConfig]:
    """(model class, ModelConfig) from a config.json, with errors naming the file."""
    try:
        meta = loads_json(path.read_bytes(), str(path))
    except FileNotFoundError:
        raise ValueError(f"{path}: missing; a checkpoint needs {CONFIG_FILE}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"{path}: not a glassformer model config (format != {FORMAT!r})")
    try:
        cls = model_class(meta.get("architecture"))
        config = ModelConfig.from_dict(meta.get("config"))
    except (ValueError, TypeError) as err:
        raise ValueError(f"{path}: {err}") from None
    return cls, config


def _add_adapters(model: torch.nn.Module, path: Path) -> None:
    """The LoRA layers config.json's ``lora`` entry records, added to ``model`` (nn/lora.py)."""
    lora = loads_json(path.read_bytes(), str(path)).get("lora")
    if lora is None:
        return
    try:
        paths = lora["paths"]
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise ValueError(f"paths={paths!r} must be a list of module paths")
        adapt(model, paths, lora["rank"], lora["alpha"], lora.get("dropout", 0.0))
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        raise ValueError(f"{path}: its lora entry does not fit the model ({err})") from None


def load_weights(model: Checkpointable, path: Path) -> None:
    """Check every tensor's name, shape and dtype against the model, then copy it in."""
    tensors = read_weights(model, path)
    with torch.no_grad():
        for name, want in _unique_tensors(model).items():
            want.copy_(tensors[name])


def read_weights(
    model: Checkpointable, path: Path, *, only: set[str] | None = None
) -> dict[str, torch.Tensor]:
    """The tensors of ``path`` under today's names (a checkpoint of the earlier module
    names is read too, models/legacy_keys.py, and the adapters' file of the earlier LoRA
    layout), each checked (name, shape, dtype) against ``model`` before it is read, and for
    NaN or infinite values once read; a tied tensor is returned under each of its names.
    ``only``: the names of the model's tensors this file holds (default: all of them)."""
    expected = _unique_tensors(model)
    if only is not None:
        expected = {name: t for name, t in expected.items() if name in only}
    try:
        with safe_open(path, framework="pt") as f:
            try:
                stored = current_names(f.keys(), model.family)  # today's name -> the stored
                rows = {name: t.shape[0] for name, t in expected.items() if t.dim()}
                stored, spans = fused_rows(stored, rows)  # rows of a fused in_proj
            except ValueError as err:
                raise ValueError(f"{path}: {err}") from None
            names = set(stored)
            missing = sorted(set(expected) - names)
            unexpected = sorted({stored[name] for name in names - set(expected)})  # as stored
            if missing or unexpected:
                found = [f"{kind} {_few(names)}" for kind, names in
                         (("missing", missing), ("unexpected", unexpected)) if names]
                raise ValueError(f"{path}: weights do not match the config: {', '.join(found)}")
            for name, want in expected.items():
                got = f.get_slice(stored[name])
                shape, dtype = tuple(got.get_shape()), got.get_dtype()
                if name in spans:  # rows start .. stop of a fused in_proj
                    (start, stop), fused = spans[name], stored[name]
                    total = max(b for p, (_, b) in spans.items() if stored[p] == fused)
                    if shape[:1] != (total,):
                        raise ValueError(
                            f"{path}: tensor {fused!r} has shape {shape}, the config's "
                            f"projections need {total} rows (the fused [W^Q; W^K; W^V])"
                        )
                    shape = (stop - start, *shape[1:])
                if shape != tuple(want.shape):
                    raise ValueError(
                        f"{path}: tensor {name!r} has shape {shape}, the config needs "
                        f"{tuple(want.shape)}"
                    )
                if dtype != _ST_DTYPES.get(want.dtype):
                    raise ValueError(
                        f"{path}: tensor {name!r} has dtype {dtype}, the model needs {want.dtype}"
                    )
            tensors = {name: _read(f, stored[name], spans.get(name)) for name in expected}
    except FileNotFoundError:
        raise ValueError(f"{path}: missing; a checkpoint needs {WEIGHTS_FILE}") from None
    except (SafetensorError, OSError) as err:
        raise ValueError(f"{path}: not a readable safetensors file ({err})") from None
    for name, tensor in tensors.items():
        check_finite(tensor, f"{path}: tensor {name!r}")
    first = {}  # id of a tensor -> the name it is stored under
    for name, t in model.state_dict(keep_vars=True).items():
        first.setdefault(id(t), name)
        if first[id(t)] in tensors:
            tensors.setdefault(name, tensors[first[id(t)]])
    return tensors


def _read(f, stored: str, span: tuple[int, int] | None) -> torch.Tensor:
    """The stored tensor, or its rows ``span`` (start, stop) (a fused in_proj's projection)."""
    if span is None:
        return f.get_tensor(stored)
    return f.get_slice(stored)[span[0] : span[1]]


def _few(names: list[str], shown: int = 5) -> str:
    """``3 ['a', 'b', 'c']``, or ``12 ['a', ..., 'e', ...]``: how many, and the first few."""
    more = ", ..." if len(names) > shown else ""
    return f"{len(names)} [{', '.join(map(repr, names[:shown]))}{more}]"


def check_finite(tensor: torch.Tensor, where: str, what: str = "the weights are") -> None:
    """Refuse a floating-point tensor holding NaN or infinite values, counting each kind:
    ``<where> holds 3 NaN values: <what> damaged ...``. A finite sum proves every value
    finite (NaN and inf propagate through it) in one pass without a copy; only a sum that is
    not finite (or that overflowed) is looked at value by value."""
    if not tensor.is_floating_point() or bool(torch.isfinite(tensor.sum())):
        return
    if bool(torch.isfinite(tensor).all()):
        return  # the sum overflowed
    counts = [(int(torch.isnan(tensor).sum()), "NaN"), (int(torch.isinf(tensor).sum()), "infinite")]
    held = " and ".join(f"{n} {kind} value{'s' if n != 1 else ''}" for n, kind in counts if n)
    raise ValueError(
        f"{where} holds {held}: {what} damaged (a run that diverged, or a corrupted "
        "file); load another checkpoint or train again"
    )


_ST_DTYPES = {
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.float64: "F64",
    torch.int64: "I64",
}


def _unique_tensors(model: Checkpointable) -> dict[str, torch.Tensor]:
    """state_dict without the second name of a tied tensor (and without buffers that are
    rebuilt from the config)."""
    seen: set[int] = set()
    out = {}
    for name, t in model.state_dict(keep_vars=True).items():
        if id(t) in seen:
            continue
        seen.add(id(t))
        out[name] = t.detach()
    return out
