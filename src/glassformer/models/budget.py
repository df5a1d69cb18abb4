"""Will a model fit this machine? Checked from its config before anything is allocated.

``check_memory`` counts the parameters (size.py) and compares the memory they take (for
training: the weights, and a gradient and the optimizer's state for each parameter that
trains, ``Training``) with the memory this machine has: available RAM, and on CUDA the
device's free memory (glassformer/machine.py reads them). It refuses only what cannot fit, so
a big model on a big machine is built as usual; building a model directly
(``DecoderLM(config)``) is never checked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..machine import available_memory, format_bytes
from .config import ModelConfig
from .size import buffer_elements, parameter_parts

__all__ = [
    "ADAMW",
    "Training",
    "check_memory",
    "describe_size",
    "dominant_settings",
    "memory_bytes",
    "what_to_lower",
]

# the settings that make each part of the parameter count big (size.parameter_parts)
_PART_SETTINGS = {
    "vocabulary": ("vocab_size", "tgt_vocab_size", "d_model"),
    "positions": ("max_len", "d_model"),
    "blocks": ("n_layer", "n_decoder_layer", "d_model", "d_ff"),
    "classes": ("n_classes", "d_model"),
    "other": ("d_model",),
}


@dataclass(frozen=True)
class Training:
    """What training holds beside the weights: a gradient and ``states`` optimizer tensors
    (``optimizer`` in words) for each parameter that trains, ``trained`` of them (None: every
    one), and the ``added`` parameters adapters bring (LoRA's A and B)."""

    trained: int | None = None
    states: int = 2
    optimizer: str = "AdamW's two moments"
    added: int = 0

    def words(self, all_train: bool) -> str:
        """'gradients, AdamW's two moments'; 'gradients and SGD's momentum of the parameters
        that train' when some are frozen."""
        if all_train:
            return f"gradients, {self.optimizer}" if self.states else "gradients"
        kept = f"gradients and {self.optimizer}" if self.states else "gradients"
        return f"{kept} of the {_count(self.trained or 0)} that train"


ADAMW = Training()  # every parameter trains with AdamW: training=True


def check_memory(
    config: ModelConfig,
    architecture: str | type,
    *,
    device: str | torch.device | None = None,
    training: bool | Training = False,
    shards: int = 1,
    processes: int = 1,
    via_cpu: bool = True,
    setting: Callable[[str], str] = str,
) -> None:
    """Refuse (ValueError) a model whose parameters do not fit the memory of this machine.

    The model runs (``training``: trains, True for AdamW on every parameter) on ``device``
    (default CPU); ``via_cpu``: its weights pass through the CPU first (built there, or read
    from a file there), so the CPU must hold them too. ``shards``: processes sharing the
    gradients and the optimizer's state (FSDP); ``processes``: processes on this machine,
    each with its own copy. ``setting`` names a config field as the user sets it (e.g.
    "model.n_layer"); the message says which of them to lower."""
    device = torch.device("cpu" if device is None else device)
    weights = memory_bytes(config, architecture)
    total = memory_bytes(config, architecture, training=training, shards=shards)
    cpu = torch.device("cpu")
    if device.type == "cpu":
        needs = {cpu: processes * total}
    else:
        needs = {cpu: processes * weights} if via_cpu else {}
        needs[device] = total
    for where, need in needs.items():
        have = available_memory(where)
        if have is not None and need > have:
            room = "of memory available on this machine"
            if where.type != "cpu":
                room = f"free on {where}"
            raise ValueError(
                f"{describe_size(config, architecture, training=training, setting=setting)}, "
                f"more than the {format_bytes(have)} {room}; "
                f"{what_to_lower(config, architecture, setting)}"
            )


def memory_bytes(
    config: ModelConfig,
    architecture: str | type,
    *,
    training: bool | Training = False,
    shards: int = 1,
) -> int:
    """The parameters in the default dtype (with ``training``, also a gradient and the
    optimizer's state for each that trains, split over ``shards``) and the buffers (position
    tables)."""
    itemsize = torch.get_default_dtype().itemsize
    t = _training(training)
    n = sum(parameter_parts(config, architecture).values()) + (t.added if t else 0)
    trained = n if t is None or t.trained is None else t.trained
    state = (1 + t.states) * trained * itemsize // shards if t else 0
    return n * itemsize + state + 4 * buffer_elements(config, architecture)


def _training(training: bool | Training) -> Training | None:
    return (ADAMW if training else None) if isinstance(training, bool) else training


def describe_size(
    config: ModelConfig,
    architecture: str | type,
    *,
    training: bool | Training = False,
    setting: Callable[[str], str] = str,
) -> str:
    """E.g. "n_layer=1000 and d_model=16384 give 3.2e12 parameters (46.7 TiB to train in
    float32: weights, gradients, AdamW's two moments)"."""
    n = sum(parameter_parts(config, architecture).values())
    size = format_bytes(memory_bytes(config, architecture, training=training))
    dtype = str(torch.get_default_dtype()).removeprefix("torch.")
    use = f"in {dtype}"
    if t := _training(training):
        all_train = t.trained is None or t.trained >= n + t.added
        use = f"to train in {dtype}: weights, {t.words(all_train)}"
    if 4 * buffer_elements(config, architecture) > n * torch.get_default_dtype().itemsize:
        use += ", most of it the position tables"
    names = [f"{setting(k)}={getattr(config, k)}" for k in dominant_settings(config, architecture)]
    given = _join(names, "and")
    return f"{given} give {_count(n)} parameters ({size} {use})"


def _count(n: int) -> str:
    """3.2e12 from a million up, else 1,234."""
    mantissa, exponent = f"{n:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}" if n >= 10**6 else f"{n:,}"


def what_to_lower(
    config: ModelConfig, architecture: str | type, setting: Callable[[str], str] = str
) -> str:
    """E.g. "lower n_layer or d_model": the settings behind most of the model's memory."""
    return f"lower {_join([setting(k) for k in dominant_settings(config, architecture)], 'or')}"


def dominant_settings(config: ModelConfig, architecture: str | type) -> list[str]:
    """The config fields behind the largest part of the model's memory."""
    parts = parameter_parts(config, architecture)
    parts["positions"] += buffer_elements(config, architecture)
    largest = max(parts, key=parts.__getitem__)
    names = [k for k in _PART_SETTINGS[largest] if _matters(config, k)]
    return names or ["d_model"]


def _join(names: list[str], word: str) -> str:
    """["a", "b", "c"], "or" -> "a, b or c"."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {word} {names[-1]}"


def _matters(c: ModelConfig, name: str) -> bool:
    """Settings left at their default (None) or unused by this family are not named."""
    if name in ("tgt_vocab_size", "n_decoder_layer"):
        return c.family == "encoder-decoder" and getattr(c, name) is not None
    if name == "n_layer" and c.family == "encoder-decoder" and c.n_decoder_layer is not None:
        return c.n_layer > 0
    if name == "d_ff":  # named when it is set and the feed-forward outweighs attention
        per_width = 3 if c.activation == "swiglu" else 2  # matrix columns per unit of d_ff
        return c.d_ff is not None and per_width * c.d_ff > 4 * c.d_model
    return True
