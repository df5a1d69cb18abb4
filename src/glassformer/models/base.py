"""What every glassformer model shares: its config, size, cost, initialisation and checkpoints."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from torch import nn

from ..fast.packing import Packing, packing_for
from ..nn import LearnedPositionalEncoding, MultiHeadAttention, TokenEmbedding
from . import checkpoint
from .config import ModelConfig
from .hooked import HookedModel
from .registry import ARCHITECTURES
from .tokens import TokenMethods

__all__ = ["GlassformerModel", "eval_mode"]


@contextmanager
def eval_mode(model: nn.Module) -> Iterator[None]:
    """Run the model in eval mode (no dropout), restoring its train/eval mode afterwards."""
    training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(training)


def _wraps(cls: type) -> bool:
    """Is ``cls`` a wrapper made by torch around a model class (FSDP's ``FSDPDecoderLM``,
    whose first base is torch's ``FSDPModule``)?"""
    return any(base.__module__.split(".")[0] == "torch" for base in cls.__bases__)


class GlassformerModel(TokenMethods, HookedModel, nn.Module):
    """Base class: ``config``, ``num_parameters``, ``flops_per_token``, ``save_pretrained`` /
    ``from_pretrained``, the hook points (``run_with_cache``, ``run_with_hooks``, see
    models/hooked.py), the attached ``tokenizer`` with ``to_tokens`` / ``to_str_tokens`` /
    ``to_single_token`` (models/tokens.py) and the caller's choice of the CPU fast paths
    (``use_fast_paths``, off when built).

    Subclasses that set ``family`` register under their class name (the ``architecture``
    written to config.json); a subclass made by a wrapper (FSDP's ``FSDPDecoderLM``) saves as
    the class it wraps."""

    family: ClassVar[str] = ""
    fast_paths: bool | None = None  # the CPU fast paths (glassformer.fast); None: the caller's

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.family and not _wraps(cls):
            ARCHITECTURES[cls.__name__] = cls

    @classmethod
    def architecture(cls) -> str:
        """The registered class this model is (or wraps): the name config.json records."""
        return next(c.__name__ for c in cls.__mro__ if ARCHITECTURES.get(c.__name__) is c)

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        if config.family != self.family:
            raise ValueError(
                f"{type(self).__name__} needs family={self.family!r}, the config has "
                f"family={config.family!r}"
            )
        self.config = config
        self.tokenizer = None  # attached tokenizer (models/tokens.py), saved with the model

    def post_init(self) -> None:
        """What every model does once its modules are built: initialise the weights."""
        self.init_weights()

    def use_fast_paths(self, on: bool = True) -> GlassformerModel:
        """Take the CPU fast paths of glassformer.fast where they apply (``on``) or run the
        reference code only (False); the results agree to float rounding. Returns the model.
        A model built, never told, runs the reference code except where its caller chooses
        the fast paths (``with glassformer.fast.fast_paths(model):``, as generation,
        prediction and evaluation do)."""
        self.fast_paths = on
        return self

    def packing(self, mask, token_mask) -> Packing | None:
        """The packing of this pass's padded batch (glassformer.fast.packing) for the loop
        over an encoder's blocks, when the fast paths are chosen and it applies; else None."""
        return packing_for(self, mask, token_mask) if self.fast_paths else None

    # Size and cost ------------------------------------------------------------------------------
    def num_parameters(self, *, exclude_embeddings: bool = False) -> int:
        """Trainable parameters, a tied matrix counted once (as Hugging Face counts them)."""
        skip = set()
        if exclude_embeddings:
            for m in self.modules():
                if isinstance(m, TokenEmbedding | LearnedPositionalEncoding | nn.Embedding):
                    skip.add(id(m.weight))
        return sum(p.numel() for p in self.parameters() if id(p) not in skip)

    def flops_per_token(self, seq_len: int | None = None) -> int:
        """Training FLOPs per token (forward + backward = 3 × forward), Kaplan et al. style:

            6 · N_matmul  +  12 · n_attention · T · d_model

        N_matmul counts every weight matrix a token is multiplied by (projections,
        feed-forward, the unembedding even when tied); the second term is QKᵀ and AV over a
        context of T = ``seq_len`` (default max_len) keys for each attention layer (self and
        cross), counted in full even under a causal mask, as nanoGPT and PaLM count it."""
        t = self.config.max_len if seq_len is None else seq_len
        n_matmul = sum(m.weight.numel() for m in self.modules() if isinstance(m, nn.Linear))
        n_attention = sum(1 for m in self.modules() if isinstance(m, MultiHeadAttention))
        return 6 * n_matmul + 12 * n_attention * t * self.config.d_model

    checkpointing = False  # see enable_checkpointing (run_blocks reads it)

    def enable_checkpointing(self, on: bool = True) -> None:
        """Activation checkpointing in training: each block's activations are recomputed in
        the backward pass instead of kept (memory of one block instead of all, about a third
        more compute)."""
        if on and self.config.norm == "batch":
            raise ValueError(
                "activation checkpointing cannot be used with norm='batch': recomputing a block "
                "would update BatchNorm's running statistics twice"
            )
        for m in self.modules():
            if hasattr(type(m), "checkpointing"):
                m.checkpointing = on

    # Initialisation -------------------------------------------------------------------------------
    def init_weights(self) -> None:
        """N(0, init_std) for every weight matrix and embedding, zero biases, unit norms;
        the projections that write into the residual stream (attention ``out_proj``,
        feed-forward ``fc2``) get std init_std / √(2 · n_layer), as in GPT-2, so the
        residual stream's variance does not grow with depth. A token embedding scaled by
        √d_model (``embed_scale``) and not tied to the unembedding is drawn with std
        1/√d_model, so that the scaled embeddings start with RMS 1 beside the sinusoids'
        1/√2; a tied one keeps init_std (TokenEmbedding says why)."""
        std = self.config.init_std
        depth = max(
            self.config.n_layer, self.config.resolved_n_decoder_layer if self.family else 0, 1
        )
        residual_std = std / math.sqrt(2 * depth)
        linear = {id(m.weight) for m in self.modules() if isinstance(m, nn.Linear)}
        for name, m in self.named_modules():
            if isinstance(m, nn.Linear):
                last = name.rsplit(".", 1)[-1]
                nn.init.normal_(m.weight, 0.0, residual_std if last in ("out_proj", "fc2") else std)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, TokenEmbedding):
                m.reset_parameters(std, tied=id(m.weight) in linear)  # W_u = W_eᵀ
            elif isinstance(m, LearnedPositionalEncoding | nn.Embedding):
                nn.init.normal_(m.weight, 0.0, std)

    # Checkpoints ---------------------------------------------------------------------------------
    def save_pretrained(self, directory: str | Path, tokenizer=None, state_dict=None) -> Path:
        """Write model.safetensors + config.json (+ tokenizer.json) into ``directory``."""
        return checkpoint.save_pretrained(self, directory, tokenizer, state_dict)

    @classmethod
    def from_pretrained(cls, directory: str | Path, *, device=None) -> GlassformerModel:
        """Rebuild a model saved by ``save_pretrained``; no pickle is ever loaded."""
        model = checkpoint.load_pretrained(directory, device=device)
        if cls is not GlassformerModel and not isinstance(model, cls):
            raise ValueError(
                f"{directory}: holds a model of class {type(model).__name__}, not "
                f"{cls.__name__}; load it with {type(model).__name__}.from_pretrained or "
                "glassformer.load_model"
            )
        return model
