"""The three GPTs that bench_train compares, built from one Shape: glassformer's DecoderLM
(GPT-2 layout), Hugging Face GPT2LMHeadModel, and a GPT from torch.nn.TransformerEncoder
layers. Each builder returns (model, loss_fn(model, ids))."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from benchmarks.common import Shape
from glassformer.models import DecoderLM
from glassformer.models.config import ModelConfig

SHAPES = {
    "tiny": Shape(n_layer=4, n_head=4, d_model=128, context=64, batch=12, vocab=65),
    "gpt2-small": Shape(n_layer=12, n_head=12, d_model=768, context=256, batch=4, vocab=50257),
}
PEERS = {"glassformer": "glassformer", "hf": "HF GPT2 (sdpa)", "torch.nn": "torch.nn layers"}


# Models ---------------------------------------------------------------------------------------
def glassformer_config(shape: Shape, **extra: Any) -> ModelConfig:
    return ModelConfig(
        family="decoder",
        vocab_size=shape.vocab,
        max_len=shape.context,
        d_model=shape.d_model,
        n_layer=shape.n_layer,
        n_head=shape.n_head,
        activation="gelu_tanh",
        norm_first=True,
        positional="learned",
        tie_embeddings=True,
        dropout=0.0,
        **extra,
    )


def build_glassformer(shape: Shape, checkpointing: bool = False):
    model = DecoderLM(glassformer_config(shape))
    if checkpointing:
        model.enable_checkpointing()
    return model, lambda m, ids: m(ids, labels=ids).loss


def build_hf(shape: Shape):
    import transformers

    transformers.logging.set_verbosity_error()
    config = transformers.GPT2Config(
        vocab_size=shape.vocab,
        n_positions=shape.context,
        n_embd=shape.d_model,
        n_layer=shape.n_layer,
        n_head=shape.n_head,
        activation_function="gelu_new",  # = gelu_tanh
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        layer_norm_epsilon=1e-5,
        bos_token_id=None,
        eos_token_id=None,
        use_cache=False,
        attn_implementation="sdpa",
    )
    model = transformers.GPT2LMHeadModel(config)
    return model, lambda m, ids: m(input_ids=ids, labels=ids, use_cache=False).loss


def build_torch(shape: Shape):
    return TorchLayersGPT(shape), lambda m, ids: m(ids)


class TorchLayersGPT(nn.Module):
    """GPT-2 layout from torch.nn parts: token + position embedding, TransformerEncoder layers
    (pre-norm, GPT-2's tanh-approximated GELU, as glassformer and Hugging Face use) under a
    causal mask, final LayerNorm, head tied to the embedding; forward(ids) returns the
    next-token cross-entropy."""

    def __init__(self, shape: Shape) -> None:
        super().__init__()
        c = shape.d_model
        self.tok = nn.Embedding(shape.vocab, c)
        self.pos = nn.Embedding(shape.context, c)
        layer = nn.TransformerEncoderLayer(
            c, shape.n_head, 4 * c, dropout=0.0, activation=gelu_tanh, batch_first=True,
            norm_first=True,
        )  # fmt: skip
        self.blocks = nn.TransformerEncoder(
            layer, shape.n_layer, norm=nn.LayerNorm(c), enable_nested_tensor=False
        )
        mask = nn.Transformer.generate_square_subsequent_mask(shape.context)  # (T, T), -inf above
        self.register_buffer("mask", mask, persistent=False)
        for name, p in self.named_parameters():  # GPT-2's init: N(0, 0.02), zero biases
            if p.dim() >= 2:
                nn.init.normal_(p, 0.0, 0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        t = ids.shape[1]
        x = self.tok(ids) + self.pos.weight[:t]  # (B, T, C)
        h = self.blocks(x, mask=self.mask[:t, :t], is_causal=True)
        logits = F.linear(h, self.tok.weight)  # (B, T, V), tied
        # next-token targets, none (-100) for the last position: shifting the labels rather
        # than slicing the logits saves a copy of them (as transformers' ForCausalLMLoss does)
        targets = F.pad(ids[:, 1:], (0, 1), value=-100)  # (B, T)
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """GPT-2's GELU (HF "gelu_new"); torch.nn's layer takes "gelu" (erf) or a callable."""
    return F.gelu(x, approximate="tanh")


BUILDERS = {"glassformer": build_glassformer, "hf": build_hf, "torch.nn": build_torch}
