"""The named model shapes, as the keyword arguments of their ModelConfig (models/presets.py
makes them ModelConfigs). This module imports nothing, so that the command line lists the
names without importing PyTorch.

    tiny            decoder, 4 layers, d_model 128, 4 heads, context 256: a CPU-sized GPT
    tiny-encoder    the same shape as an encoder (masked LM, classification)
    tiny-seq2seq    encoder-decoder, 2 + 2 layers, d_model 128, post-norm, sinusoidal
    tiny-llama      decoder with RMSNorm, SwiGLU, rotary positions, grouped-query attention
    gpt2            GPT-2 small (124M): 12 layers, 768, 12 heads, context 1024, vocab 50257
    bert-base       BERT base (110M): 12 layers, 768, 12 heads, post-norm, MLM + pooler
    vaswani-base    Vaswani et al. base (≈63M with a 37000 vocabulary): 6 + 6 layers, 512,
                    8 heads, d_ff 2048, relu, post-norm, sinusoidal, shared and tied, √d scale

Dropout sites (glassformer.nn.blocks): the tiny presets keep torch.nn's layout (ff_dropout
None: the feed-forward's hidden layer is dropped at ``dropout`` too, as in
torch.nn.TransformerEncoderLayer; their dropout is 0 unless set). The others follow their
models: gpt2 drops embeddings, attention weights and each sub-layer's output (embd_pdrop,
attn_pdrop, resid_pdrop), not the hidden layer (ff_dropout=0.0); bert-base likewise
(hidden_dropout_prob, attention_probs_dropout_prob); vaswani-base drops, as the paper's
"Residual Dropout" (§5.4) says, each sub-layer's output and the embedding sums only
(ff_dropout=0.0, attn_dropout=0.0).
"""

from __future__ import annotations

from typing import Any

__all__ = ["SHAPES"]

SHAPES: dict[str, dict[str, Any]] = {
    "tiny": dict(family="decoder", d_model=128, n_layer=4, n_head=4, max_len=256),
    "tiny-encoder": dict(
        family="encoder", d_model=128, n_layer=4, n_head=4, max_len=256, pooling="mean"
    ),
    "tiny-seq2seq": dict(
        family="encoder-decoder",
        d_model=128,
        n_layer=2,
        n_head=4,
        d_ff=512,
        max_len=128,
        activation="relu",
        norm_first=False,
        positional="sinusoidal",
        embed_scale=True,
    ),
    "tiny-llama": dict(
        family="decoder",
        d_model=128,
        n_layer=4,
        n_head=4,
        n_kv_head=2,
        d_ff=352,
        max_len=256,
        activation="swiglu",
        norm="rms",
        positional="rotary",
        bias=False,
        tie_embeddings=False,
    ),
    "gpt2": dict(
        family="decoder",
        vocab_size=50257,
        max_len=1024,
        d_model=768,
        n_layer=12,
        n_head=12,
        activation="gelu_tanh",
        dropout=0.1,
        ff_dropout=0.0,  # GPT-2's MLP: dropout(c_proj(a(c_fc(x)))), no dropout inside
    ),
    "bert-base": dict(
        family="encoder",
        vocab_size=30522,
        max_len=512,
        d_model=768,
        n_layer=12,
        n_head=12,
        d_ff=3072,
        activation="gelu",
        norm_first=False,
        norm_eps=1e-12,
        embed_norm=True,
        type_vocab_size=2,
        mlm_transform=True,
        head_bias=True,
        pooler=True,
        dropout=0.1,
        ff_dropout=0.0,  # BertIntermediate has no dropout; BertOutput drops after its dense
    ),
    "vaswani-base": dict(
        family="encoder-decoder",
        vocab_size=37000,
        max_len=512,
        d_model=512,
        n_layer=6,
        n_head=8,
        d_ff=2048,
        activation="relu",
        norm_first=False,
        positional="sinusoidal",
        embed_scale=True,
        dropout=0.1,
        attn_dropout=0.0,  # §5.4: dropout on sub-layer outputs and embedding sums only
        ff_dropout=0.0,
    ),
}
