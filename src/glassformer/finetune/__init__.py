"""What trains: freezing parts of a model, fixed embeddings, and LoRA adapters added where
the model is built, which merge back into a plain model."""

from .freeze import fix_embeddings, freeze, part_names, select, trainable_count
from .lora import DEFAULT_TARGETS, LoRALinear, add_lora, lora_layers, merge_lora

__all__ = [
    "DEFAULT_TARGETS",
    "LoRALinear",
    "add_lora",
    "fix_embeddings",
    "freeze",
    "lora_layers",
    "merge_lora",
    "part_names",
    "select",
    "trainable_count",
]
