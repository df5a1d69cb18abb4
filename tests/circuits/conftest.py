"""Models shared by the circuits tests: glassformer's tiny models with every weight moved off
its initial value, and small converted Hugging Face models (random weights, offline)."""

from __future__ import annotations

import pytest
import torch

from glassformer.models.config import ModelConfig


def perturbed(cls, vocab_size: int, n_head: int = 4, n_layer: int = 2, **options):
    """A tiny ``cls`` model with every weight perturbed (no norm gain 1, no bias 0) and
    BatchNorm's running statistics moved, in training mode as built."""
    torch.manual_seed(0)
    config = ModelConfig(
        vocab_size=vocab_size, d_model=16, n_head=n_head, n_layer=n_layer, max_len=16, **options
    )
    model = cls(config)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.2 * torch.randn_like(p))
        for name, b in model.named_buffers():
            if name.endswith(("running_mean", "running_var")):
                b.add_(0.5 * torch.rand_like(b))
    return model


def huggingface(name: str, vocab_size: int):
    """A 2-layer, 4-head ``transformers`` model (GPT2LMHeadModel, LlamaForCausalLM,
    BertForMaskedLM, BertForSequenceClassification or BartForConditionalGeneration) with its
    weights perturbed, in eval mode."""
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    sizes = dict(vocab_size=vocab_size, max_position_embeddings=16)
    if name == "GPT2LMHeadModel":
        config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=vocab_size)
    elif name == "BartForConditionalGeneration":
        config = transformers.BartConfig(
            encoder_layers=2,
            decoder_layers=2,
            d_model=32,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=48,
            decoder_ffn_dim=48,
            **sizes,
        )
    else:
        layers = dict(num_hidden_layers=2, hidden_size=32, num_attention_heads=4)
        if name == "LlamaForCausalLM":
            config = transformers.LlamaConfig(
                **layers, num_key_value_heads=2, intermediate_size=48, **sizes
            )
        else:
            config = transformers.BertConfig(
                **layers, intermediate_size=48, type_vocab_size=2, **sizes
            )
    model = getattr(transformers, name)(config)
    torch.manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return model.eval()
