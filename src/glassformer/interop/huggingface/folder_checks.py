"""Checks on a Hugging Face model folder around ``from_pretrained`` (loader.from_huggingface_dir):
a damaged or mismatched folder is refused in one ``ValueError`` naming the file, the field or
tensor, its value and what is allowed; never a traceback from inside ``transformers``, never a
model partly started from random values.

Before anything is built:

    config.json   each size a whole number >= 1 (not "768", not 0), each head count dividing
                  what it splits, the activation one the converter reads (``ConfigSpec``, one per
                  converter module)
    weights       every safetensors file readable (not empty, not cut short)

After ``transformers`` read the weights, from its loading report (``output_loading_info``):

    mismatched    a tensor whose shape differs from what config.json implies: refused, naming
                  the tensor, its shape and the expected one
    missing       a tensor the model needs and the weights lack (config.json names more layers
                  than the weights hold, a tensor deleted): refused, naming the first few and
                  the count. Only a head the folder was not saved with, when ``architecture=``
                  asks for another class than the folder's, starts anew, reported in a
                  ``WeightsNote`` warning
    unexpected    a tensor inside the model's layers (the weights hold more layers than
                  config.json names, or a part the architecture lacks): refused; elsewhere (a
                  pooler, a head of another task such as BERT's next-sentence head beside its
                  masked-LM head): unused, reported in a ``WeightsNote`` warning, as
                  ``transformers`` reports it
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch import nn

__all__ = [
    "ConfigSpec",
    "WeightsNote",
    "check_config_json",
    "check_loading_report",
    "check_splits",
    "weight_names",
]

SHOWN = 3  # tensor names shown in a message


class WeightsNote(UserWarning):
    """Weights of a Hugging Face folder left unused, or a head started anew (see module)."""


@dataclass(frozen=True)
class ConfigSpec:
    """What config.json must hold for a converter, checked before transformers reads it:
    ``sizes`` whole numbers >= 1 (``nullable`` ones may also be null: transformers derives
    them), ``splits`` (whole, parts) pairs where parts must divide whole (heads of a width),
    ``activation`` the field naming the activation and ``activations`` its allowed values."""

    sizes: tuple[str, ...]
    nullable: tuple[str, ...] = ()
    splits: tuple[tuple[str, str], ...] = ()
    activation: str = ""
    activations: tuple[str, ...] = ()


def check_config_json(config_file: Path, meta: dict[str, Any], spec: ConfigSpec) -> None:
    """Refuse a config.json field of the wrong type or range (fields it leaves out take
    transformers' defaults, which are valid)."""
    for name in spec.sizes:
        if name not in meta or (meta[name] is None and name in spec.nullable):
            continue
        value = meta[name]
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            allowed = "a whole number >= 1" + (" or null" if name in spec.nullable else "")
            raise ValueError(f"{config_file}: {name}={value!r} is not a size; allowed: {allowed}")
    act = meta.get(spec.activation)
    if spec.activation in meta and act not in spec.activations:
        raise ValueError(
            f"{config_file}: {spec.activation}={act!r} is not an activation glassformer reads; "
            f"allowed: {', '.join(map(repr, spec.activations))}"
        )
    check_splits(config_file, meta, spec)


def check_splits(config_file: Path, values: Any, spec: ConfigSpec) -> None:
    """Refuse heads that do not divide what they split (``values``: config.json as a dict, or
    transformers' config object with its defaults filled in)."""
    get = values.get if isinstance(values, dict) else lambda k: getattr(values, k, None)
    for whole, parts in spec.splits:
        w, p = get(whole), get(parts)
        if isinstance(w, int) and isinstance(p, int) and p >= 1 and w % p:
            raise ValueError(
                f"{config_file}: {parts}={p} does not divide {whole}={w}; allowed: a divisor "
                f"of {whole}"
            )


def weight_names(path: Path) -> list[str] | None:
    """The tensor names of the folder's safetensors file(s) (``model.safetensors``, or the
    shards ``model.safetensors.index.json`` lists), each file's header read to prove it is
    readable; None when the folder holds no safetensors (transformers reads what it holds)."""
    from safetensors import SafetensorError, safe_open

    index = path / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise ValueError(f"{index}: not a safetensors index ({err})") from None
        files = [path / name for name in shards]
    elif (path / "model.safetensors").is_file():
        files = [path / "model.safetensors"]
    else:
        return None
    names: list[str] = []
    for file in files:
        try:
            with safe_open(file, framework="pt") as f:
                names += list(f.keys())
        except (SafetensorError, OSError) as err:
            raise ValueError(
                f"{file}: not a readable safetensors file ({err}); it is damaged or cut short "
                "(an interrupted download or copy?): fetch or save it again"
            ) from None
    return names


def check_loading_report(
    path: Path, hf_model: Any, info: dict[str, Any], *, own_class: bool
) -> None:
    """Refuse or report what ``from_pretrained(..., output_loading_info=True)`` found
    (module docstring); ``own_class``: the class is the one the folder names."""
    name = type(hf_model).__name__
    mismatched = sorted(info.get("mismatched_keys") or ())
    if mismatched:
        key, have, want = mismatched[0]
        more = f" (and {len(mismatched) - 1} more tensors)" if len(mismatched) > 1 else ""
        raise ValueError(
            f"{path}: tensor {key!r} of the weights has shape {tuple(have)}, {name} of "
            f"config.json needs {tuple(want)}{more}: config.json and the weights do not match"
        )
    missing = sorted(info.get("missing_keys") or ())
    prefix = f"{hf_model.base_model_prefix}."
    if missing and not own_class and not any(k.startswith(prefix) for k in missing):
        warnings.warn(
            f"{path}: {name}'s head is not in the weights and starts from random values: "
            f"{_names(missing)}",
            WeightsNote,
            stacklevel=3,
        )
    elif missing:
        hint = " (does config.json name more layers than they hold?)" if len(missing) > 1 else ""
        raise ValueError(
            f"{path}: {name} of config.json needs {_names(missing)}, which the weights lack"
            f"{hint}; refusing to start them from random values"
        )
    unexpected = sorted(info.get("unexpected_keys") or ())
    inside = [k for k in unexpected if _in_layers(hf_model, k)]
    if inside:
        raise ValueError(
            f"{path}: the weights hold {_names(inside)}, which {name} of config.json has no "
            "place for (do the weights hold more layers than config.json names?)"
        )
    if unexpected:
        warnings.warn(
            f"{path}: not used by {name} (as transformers leaves them): {_names(unexpected)}",
            WeightsNote,
            stacklevel=3,
        )


def _in_layers(model: nn.Module, key: str) -> bool:
    """Does tensor ``key`` lie inside (or past the end of) one of the model's layer lists?"""
    module: nn.Module | None = model
    for part in key.split(".")[:-1]:
        if isinstance(module, nn.ModuleList):
            return True
        module = module._modules.get(part)
        if module is None:
            return False
    return isinstance(module, nn.ModuleList)


def _names(keys: Iterable[str]) -> str:
    """``17 tensors: 'a', 'b', 'c', ... 14 more``, layer numbers sorted as numbers."""
    keys = sorted(keys, key=lambda k: [int(s) if s.isdigit() else s for s in re.split(r"(\d+)", k)])
    shown = ", ".join(repr(k) for k in keys[:SHOWN])
    more = f", ... {len(keys) - SHOWN} more" if len(keys) > SHOWN else ""
    count = f"{len(keys)} tensor{'s' if len(keys) != 1 else ''}"
    return f"{count}: {shown}{more}"
