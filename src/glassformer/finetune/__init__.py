"""What trains: freezing parts of a model, fixed embeddings, and LoRA adapters that merge
back into a plain model."""

from .freeze import fix_embeddings, freeze, part_names, select, trainable_count
from .lora import DEFAULT_TARGETS, LoRALinear, apply_lora, lora_layers, merge_lora
from .lora_state import LORA_FILE, join_state, plain_modules, split_state

__all__ = [
    "DEFAULT_TARGETS",
    "LORA_FILE",
    "LoRALinear",
    "apply_lora",
    "fix_embeddings",
    "freeze",
    "join_state",
    "lora_layers",
    "merge_lora",
    "part_names",
    "plain_modules",
    "select",
    "split_state",
    "trainable_count",
]
