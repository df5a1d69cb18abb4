"""The three encoders that bench_encoder compares, built from one Shape in BERT's layout:
glassformer's EncoderModel, torch.nn.TransformerEncoder on its fast path, Hugging Face
BertModel; and the batch they all read. Each builder returns (model, forward(ids, mask))."""

from __future__ import annotations

import torch
from torch import nn

from benchmarks.common import Shape
from glassformer.models import EncoderModel
from glassformer.models.config import ModelConfig

SHAPES = {
    "tiny": Shape(n_layer=4, n_head=4, d_model=128, context=64, batch=16, vocab=1000),
    "bert-base": Shape(n_layer=12, n_head=12, d_model=768, context=128, batch=8, vocab=30522),
}
PEERS = {"glassformer": "glassformer", "torch.nn": "torch.nn fast path", "hf": "HF BertModel"}
INPUTS = ("dense", "padded")
KERNELS = {  # profiler op name -> short label
    "aten::scaled_dot_product_attention": "sdpa",
    "aten::_transformer_encoder_layer_fwd": "fast",
    "aten::_nested_tensor_from_mask": "nested",
    "aten::index_copy_": "packed",  # glassformer's fast/packing.py: padding skipped
}


# Models ---------------------------------------------------------------------------------------
def glassformer_config(shape: Shape) -> ModelConfig:
    return ModelConfig(
        family="encoder",
        vocab_size=shape.vocab,
        max_len=shape.context,
        d_model=shape.d_model,
        n_layer=shape.n_layer,
        n_head=shape.n_head,
        activation="gelu",
        norm_first=False,
        norm_eps=1e-12,
        embed_norm=True,
        type_vocab_size=2,
        pooler=True,
        dropout=0.0,
    )


def build_glassformer(shape: Shape):
    model = EncoderModel(glassformer_config(shape)).use_fast_paths()  # packing (glassformer.fast)
    return model, lambda ids, mask: model(ids, mask)


def build_hf(shape: Shape):
    import transformers

    transformers.logging.set_verbosity_error()
    config = transformers.BertConfig(
        vocab_size=shape.vocab,
        hidden_size=shape.d_model,
        num_hidden_layers=shape.n_layer,
        num_attention_heads=shape.n_head,
        intermediate_size=4 * shape.d_model,
        max_position_embeddings=shape.context,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        attn_implementation="sdpa",
    )
    model = transformers.BertModel(config)
    return model, lambda ids, mask: model(input_ids=ids, attention_mask=mask)


def build_torch(shape: Shape):
    model = TorchEncoder(shape)
    return model, lambda ids, mask: model(ids, None if mask is None else mask == 0)


class TorchEncoder(nn.Module):
    """BERT's layout from torch.nn parts: token + position + token-type (0) embeddings,
    LayerNorm, nn.TransformerEncoder (post-norm, gelu), pooler tanh(W h_0 + b).
    forward(ids, padding) with padding (B, T) True at padded positions (torch.nn's rule)."""

    def __init__(self, shape: Shape) -> None:
        super().__init__()
        c = shape.d_model
        self.tok = nn.Embedding(shape.vocab, c)
        self.pos = nn.Embedding(shape.context, c)
        self.segment = nn.Embedding(2, c)
        self.norm = nn.LayerNorm(c, eps=1e-12)
        layer = nn.TransformerEncoderLayer(
            c, shape.n_head, 4 * c, dropout=0.0, activation="gelu", batch_first=True,
            layer_norm_eps=1e-12,
        )  # fmt: skip
        self.layers = nn.TransformerEncoder(layer, shape.n_layer, enable_nested_tensor=True)
        self.pooler = nn.Linear(c, c)
        for p in self.parameters():  # the deep-copied layers would otherwise start equal
            if p.dim() >= 2:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, ids: torch.Tensor, padding: torch.Tensor | None = None):
        t = ids.shape[1]
        x = self.tok(ids) + self.pos.weight[:t] + self.segment.weight[0]  # (B, T, C)
        h = self.layers(self.norm(x), src_key_padding_mask=padding)  # (B, T, C)
        return h, self.pooler(h[:, 0]).tanh()


BUILDERS = {"glassformer": build_glassformer, "hf": build_hf, "torch.nn": build_torch}


def make_batch(shape: Shape, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Random ids (B, T) and an attention mask (B, T), 1 = real: lengths in [T/4, T], the
    first row full."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, shape.vocab, (shape.batch, shape.context), generator=g)
    low = max(1, shape.context // 4)
    lengths = torch.randint(low, shape.context + 1, (shape.batch,), generator=g)
    lengths[0] = shape.context
    mask = (torch.arange(shape.context) < lengths[:, None]).long()  # (B, T)
    return ids, mask
