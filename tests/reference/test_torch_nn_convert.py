"""glassformer.interop.from_torch / to_torch: round trips, torch.nn's fast paths, fully masked
rows, what carries over, and the ValueErrors for what does not map."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.testing import assert_close

from glassformer.interop import (
    TorchStyleDecoder,
    TorchStyleDecoderLayer,
    TorchStyleEncoder,
    TorchStyleEncoderLayer,
    TorchStyleMultiheadAttention,
    TorchStyleTransformer,
    from_torch,
    to_torch,
    torch_key_map,
)
from glassformer.nn import (
    Decoder,
    DecoderBlock,
    Encoder,
    EncoderBlock,
    MultiHeadAttention,
)

pytestmark = [
    pytest.mark.filterwarnings("ignore:enable_nested_tensor is True"),
    pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors"),
]

D, FF, H = 16, 32, 2
ATOL = 1e-5


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny tensors: intra-op threads only add overhead. Restored afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def _seed():
    """torch.nn initialises its weights from the global generator: fix it per test."""
    torch.manual_seed(0)


def perturb(module: nn.Module, seed: int = 0) -> nn.Module:
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=gen))
    return module


def padding_mask(lengths: list[int], s: int) -> torch.Tensor:
    return torch.arange(s) >= torch.tensor(lengths)[:, None]  # (B, S) True = padding


def call(module: nn.Module, kind: str, batch_first: bool, b: int = 3, t: int = 5, s: int = 6):
    """Run ``module`` (torch.nn or adapter of kind ``kind``) on fixed inputs with masks."""
    gen = torch.Generator().manual_seed(1)

    def seq(n: int) -> torch.Tensor:
        x = torch.randn(b, n, D, generator=gen)
        return x if batch_first else x.transpose(0, 1)

    causal = nn.Transformer.generate_square_subsequent_mask(t)
    src_pad = padding_mask([s, 2, 4][:b], s)
    if kind == "mha":
        x = seq(t)
        return module(x, x, x, key_padding_mask=padding_mask([t, 2, 3][:b], t))
    if kind == "encoder_layer":
        return module(seq(s), src_key_padding_mask=src_pad)
    if kind == "encoder":
        return module(seq(s), src_key_padding_mask=src_pad)
    tgt, memory = seq(t), seq(s)
    if kind in ("decoder_layer", "decoder"):
        return module(
            tgt, memory, tgt_mask=causal, memory_key_padding_mask=src_pad, tgt_is_causal=True
        )
    return module(
        seq(s), tgt, tgt_mask=causal, src_key_padding_mask=src_pad, memory_key_padding_mask=src_pad
    )


def torch_modules(batch_first: bool, norm_first: bool, bias: bool, activation="gelu"):
    """One of each convertible torch.nn module, with random weights."""
    options = dict(
        dim_feedforward=FF,
        dropout=0.1,
        activation=activation,
        layer_norm_eps=1e-6,
        batch_first=batch_first,
        norm_first=norm_first,
        bias=bias,
    )
    enc_layer = nn.TransformerEncoderLayer(D, H, **options)
    dec_layer = nn.TransformerDecoderLayer(D, H, **options)
    return {
        "mha": nn.MultiheadAttention(D, H, dropout=0.1, bias=bias, batch_first=batch_first),
        "encoder_layer": enc_layer,
        "decoder_layer": dec_layer,
        "encoder": nn.TransformerEncoder(enc_layer, 2, nn.LayerNorm(D, eps=1e-4, bias=bias)),
        "decoder": nn.TransformerDecoder(dec_layer, 2, None),
        "transformer": nn.Transformer(D, H, 2, 1, **options),
    }


ADAPTER_TYPES = {
    "mha": TorchStyleMultiheadAttention,
    "encoder_layer": TorchStyleEncoderLayer,
    "decoder_layer": TorchStyleDecoderLayer,
    "encoder": TorchStyleEncoder,
    "decoder": TorchStyleDecoder,
    "transformer": TorchStyleTransformer,
}


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("kind", list(ADAPTER_TYPES))
@pytest.mark.parametrize(
    "batch_first, norm_first, bias", [(True, False, True), (False, True, False), (True, True, True)]
)
def test_torch_round_trip(kind, batch_first, norm_first, bias):
    """to_torch(from_torch(m)): same class, identical state_dict, options and outputs."""
    m = perturb(torch_modules(batch_first, norm_first, bias)[kind]).eval()
    adapter = from_torch(m)
    assert type(adapter) is ADAPTER_TYPES[kind]
    back = to_torch(adapter)
    assert type(back) is type(m)
    assert back.training is False
    want, got = m.state_dict(), back.state_dict()
    assert list(got) == list(want)
    for key in want:
        assert torch.equal(got[key], want[key]), key
    for name, mod in m.named_modules():  # options that are not in the state_dict
        twin = back.get_submodule(name)
        for attr in ("batch_first", "norm_first", "eps", "p", "dropout", "num_heads"):
            value = getattr(mod, attr, None)
            if not isinstance(value, nn.Module):  # e.g. the layers' Dropout modules
                assert getattr(twin, attr, None) == value, f"{name}.{attr}"
        if hasattr(mod, "activation_relu_or_gelu"):
            assert twin.activation_relu_or_gelu == mod.activation_relu_or_gelu
    with torch.no_grad():
        out, back_out = call(m, kind, batch_first), call(back, kind, batch_first)
    out, back_out = (out[0], back_out[0]) if kind == "mha" else (out, back_out)
    assert torch.equal(back_out, out)


NATIVE = {
    "mha": lambda: MultiHeadAttention(D, H, dropout=0.1),
    "encoder_layer": lambda: EncoderBlock(D, H, FF, activation="gelu", norm_first=True),
    "decoder_layer": lambda: DecoderBlock(D, H, FF, bias=False, eps=1e-6),
    "encoder": lambda: Encoder(2, D, H, FF, final_norm=True, dropout=0.2),
    "decoder": lambda: Decoder(3, D, H, FF, norm_first=True),
}


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("kind", list(NATIVE))
def test_glassformer_round_trip(kind, batch_first):
    """from_torch(to_torch(g)) holds g's state_dict; the torch module computes what g does."""
    g = perturb(NATIVE[kind]()).eval()
    m = to_torch(g, batch_first=batch_first)
    assert m.training is False
    adapter = from_torch(m)
    assert adapter.batch_first == batch_first
    want, got = g.state_dict(), adapter.module.state_dict()
    assert sorted(got) == sorted(want)
    for key in want:
        assert torch.equal(got[key], want[key]), key
    out_g = call(TORCH_STYLE[kind](g, batch_first), kind, batch_first)
    out_adapter = call(adapter, kind, batch_first)
    out_torch = call(m, kind, batch_first)
    if kind == "mha":
        out_g, out_adapter, out_torch = out_g[0], out_adapter[0], out_torch[0]
    assert torch.equal(out_adapter, out_g)
    assert_close(out_torch, out_g, atol=ATOL, rtol=0)


TORCH_STYLE = {
    "mha": TorchStyleMultiheadAttention,
    "encoder_layer": TorchStyleEncoderLayer,
    "decoder_layer": TorchStyleDecoderLayer,
    "encoder": TorchStyleEncoder,
    "decoder": TorchStyleDecoder,
}


def test_native_modules_default_to_batch_first():
    assert to_torch(EncoderBlock(D, H, FF)).self_attn.batch_first is True
    adapter = TorchStyleEncoderLayer(EncoderBlock(D, H, FF), batch_first=False)
    assert to_torch(adapter).self_attn.batch_first is False
    assert to_torch(adapter, batch_first=True).self_attn.batch_first is True


def test_transformer_adapter_round_trip_from_parts():
    """A TorchStyleTransformer built from native parts converts to nn.Transformer."""
    enc = perturb(Encoder(2, D, H, FF, final_norm=True, activation="gelu"), 1)
    dec = perturb(Decoder(1, D, H, FF, final_norm=True, activation="gelu"), 2)
    adapter = TorchStyleTransformer(enc, dec, batch_first=True).eval()
    m = to_torch(adapter)
    assert isinstance(m, nn.Transformer) and m.batch_first
    assert_close(
        call(m, "transformer", True), call(adapter, "transformer", True), atol=ATOL, rtol=0
    )


# --------------------------------------------------------------------------- what carries over


def test_options_carry_over():
    m = nn.TransformerDecoderLayer(
        D,
        4,
        24,
        dropout=0.3,
        activation=nn.GELU(),
        layer_norm_eps=1e-3,
        norm_first=True,
        bias=False,
        batch_first=True,
    )
    adapter = from_torch(m)
    block = adapter.module
    assert adapter.batch_first is True
    assert block.norm_first is True
    assert block.mlp.activation == "gelu"
    assert block.mlp.fc1.out_features == 24 and block.mlp.fc1.bias is None
    assert block.attn.n_head == 4 and block.cross_attn.n_head == 4
    assert block.attn.dropout == block.cross_attn.dropout == 0.3
    assert block.dropout.p == block.mlp.dropout.p == 0.3
    for norm in (block.ln1, block.ln2, block.ln3):
        assert norm.eps == 1e-3 and norm.bias is None
    assert adapter.training


def test_dtype_requires_grad_and_mode_carry_over():
    m = nn.TransformerEncoderLayer(D, H, FF, dtype=torch.float64).eval()
    m.linear1.weight.requires_grad_(False)
    adapter = from_torch(m)
    params = dict(adapter.module.named_parameters())
    assert all(p.dtype == torch.float64 for p in params.values())
    assert params["mlp.fc1.weight"].requires_grad is False
    assert params["mlp.fc2.weight"].requires_grad is True
    assert not adapter.training and not adapter.module.training
    assert to_torch(adapter).linear1.weight.dtype == torch.float64


def test_weights_are_copied_not_shared():
    m = nn.MultiheadAttention(D, H)
    adapter = from_torch(m)
    with torch.no_grad():
        m.in_proj_weight.zero_()
    assert adapter.module.q_proj.weight.abs().sum() > 0


def test_key_map_encoder_decoder_layers():
    enc = torch_key_map(nn.TransformerEncoderLayer(D, H, FF))
    assert enc["self_attn.in_proj_weight"] == (
        "attn.q_proj.weight", "attn.k_proj.weight", "attn.v_proj.weight"
    )  # fmt: skip
    assert enc["linear1.weight"] == ("mlp.fc1.weight",)
    assert enc["norm2.bias"] == ("ln2.bias",)
    dec = torch_key_map(nn.Transformer(D, H, 1, 2, FF))
    assert dec["decoder.layers.1.multihead_attn.out_proj.bias"] == (
        "decoder.blocks.1.cross_attn.out_proj.bias",
    )
    assert dec["decoder.layers.0.multihead_attn.in_proj_bias"][2] == (
        "decoder.blocks.0.cross_attn.v_proj.bias"
    )
    assert dec["decoder.layers.0.norm2.weight"] == ("decoder.blocks.0.ln2.weight",)
    assert dec["decoder.layers.0.norm3.weight"] == ("decoder.blocks.0.ln3.weight",)
    assert dec["encoder.norm.weight"] == ("encoder.ln_final.weight",)


def test_projection_layout_matches_torch():
    """torch's in_proj_weight rows are [W^Q; W^K; W^V]: glassformer's three projections, and
    back again bit for bit."""
    m = nn.MultiheadAttention(D, H)
    native = from_torch(m).module
    for w_torch, (w, _) in zip(m.in_proj_weight.chunk(3), native.projection_weights(), strict=True):
        assert torch.equal(w, w_torch)
    assert torch.equal(native.k_proj.weight, m.in_proj_weight[D : 2 * D])
    back = to_torch(native)
    assert torch.equal(back.in_proj_weight, m.in_proj_weight)
    assert torch.equal(back.in_proj_bias, m.in_proj_bias)


# --------------------------------------------------------------------------- torch.nn fast paths


@torch.no_grad()
@pytest.mark.parametrize("need_weights", [False, True])
def test_mha_fast_path(need_weights):
    """Eval, no grad, batch_first, even heads: torch runs _native_multi_head_attention."""
    m = perturb(nn.MultiheadAttention(D, 4, batch_first=True)).eval()
    x = torch.randn(3, 6, D)
    padding = padding_mask([6, 2, 4], 6)
    want = m(x, x, x, key_padding_mask=padding, need_weights=need_weights)
    got = from_torch(m)(x, x, x, key_padding_mask=padding, need_weights=need_weights)
    assert_close(got[0], want[0], atol=ATOL, rtol=0)
    if need_weights:
        assert_close(got[1], want[1], atol=ATOL, rtol=0)


@torch.no_grad()
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_fast_path(activation):
    m = nn.TransformerEncoderLayer(D, 4, FF, activation=activation, batch_first=True)
    m = perturb(m).eval()
    x, padding = torch.randn(3, 7, D), padding_mask([7, 3, 5], 7)
    want = m(x, src_key_padding_mask=padding)
    got = from_torch(m)(x, src_key_padding_mask=padding)
    # eval, no grad, batch_first, even heads, biases, relu/gelu: torch.nn runs its fused
    # _transformer_encoder_layer_fwd; unlike the encoder stack it computes padded rows too
    assert_close(got, want, atol=ATOL, rtol=0)


@torch.no_grad()
@pytest.mark.parametrize("final_norm", [False, True])
def test_encoder_nested_tensor_fast_path(final_norm):
    """torch.nn's TransformerEncoder in eval mode packs the batch into a nested tensor that
    drops the padded positions, and unpacks it with 0 there: its output at padded positions
    is not a function of the inputs (0, or norm(0) with a final norm), so we compare the
    real positions only. glassformer computes padded positions like any other."""
    norm = nn.LayerNorm(D) if final_norm else None
    layer = nn.TransformerEncoderLayer(D, 4, FF, batch_first=True)
    m = perturb(nn.TransformerEncoder(layer, 2, norm)).eval()
    x, padding = torch.randn(3, 7, D), padding_mask([7, 3, 5], 7)
    want = m(x, src_key_padding_mask=padding)
    got = from_torch(m)(x, src_key_padding_mask=padding)
    real = ~padding
    if not final_norm:
        assert torch.all(want[padding] == 0)  # the nested-tensor path was taken
    assert torch.isfinite(got).all()
    assert_close(got[real], want[real], atol=ATOL, rtol=0)


# --------------------------------------------------------------------------- fully masked rows


def test_mha_fully_masked_rows_give_zeros():
    """torch.nn returns NaN for a query that may attend to nothing; glassformer's attention
    returns zeros (so the module returns the output bias) and matches torch elsewhere."""
    m = perturb(nn.MultiheadAttention(D, H, batch_first=True))
    x = torch.randn(3, 5, D)
    padding = padding_mask([5, 0, 3], 5)  # example 1 is all padding
    attn_mask = torch.zeros(5, 5, dtype=torch.bool)
    attn_mask[2] = True  # query 2 may attend to nothing
    dead = torch.zeros(3, 5, dtype=torch.bool)
    dead[1], dead[:, 2] = True, True
    want, want_w = m(x, x, x, key_padding_mask=padding, attn_mask=attn_mask)
    assert torch.isnan(want[dead]).all()
    x_g = x.clone().requires_grad_()
    adapter = from_torch(m)
    got, got_w = adapter(x_g, x_g, x_g, key_padding_mask=padding, attn_mask=attn_mask)
    assert torch.isfinite(got).all() and torch.isfinite(got_w).all()
    assert torch.equal(got_w[dead], torch.zeros_like(got_w[dead]))
    assert_close(got[dead], m.out_proj.bias.expand(int(dead.sum()), D), atol=ATOL, rtol=0)
    assert_close(got[~dead], want[~dead], atol=ATOL, rtol=0)
    assert_close(got_w[~dead], want_w[~dead], atol=ATOL, rtol=0)
    got.sum().backward()
    assert torch.isfinite(x_g.grad).all()
    assert all(torch.isfinite(p.grad).all() for p in adapter.parameters())


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_fully_masked_example(norm_first):
    """An all-padding example: torch.nn's attention gives NaN or (SDPA kernels of recent
    torch) zeros there; glassformer gives zeros, so the layer stays finite, and matches torch
    wherever torch is finite, which includes every example with a real token."""
    m = perturb(nn.TransformerEncoderLayer(D, H, FF, 0.0, norm_first=norm_first))
    x = torch.randn(4, 3, D)  # (T, B, C)
    padding = padding_mask([4, 0, 2], 4)
    want = m(x, src_key_padding_mask=padding)
    x_g = x.clone().requires_grad_()
    got = from_torch(m)(x_g, src_key_padding_mask=padding)
    assert torch.isfinite(got).all()
    finite = torch.isfinite(want).all(dim=-1)  # (T, B)
    assert finite[:, [0, 2]].all()
    assert_close(got[finite], want[finite], atol=ATOL, rtol=0)
    got.sum().backward()
    assert torch.isfinite(x_g.grad).all()


# --------------------------------------------------------------------------- the is_causal hint


def test_is_causal_without_mask_applies_the_causal_mask():
    """torch.nn's is_causal needs the mask too (it is a hint); the adapter accepts it alone."""
    m = perturb(nn.TransformerDecoderLayer(D, H, FF, 0.0, batch_first=True))
    tgt, memory = torch.randn(2, 5, D), torch.randn(2, 3, D)
    causal = nn.Transformer.generate_square_subsequent_mask(5)
    want = m(tgt, memory, tgt_mask=causal, tgt_is_causal=True)
    assert_close(from_torch(m)(tgt, memory, tgt_is_causal=True), want, atol=ATOL, rtol=0)
    with pytest.raises(RuntimeError):  # what torch.nn does without the mask
        nn.MultiheadAttention(D, H)(tgt, tgt, tgt, is_causal=True)


def test_memory_is_causal_square():
    m = perturb(nn.TransformerDecoderLayer(D, H, FF, 0.0, batch_first=True))
    tgt, memory = torch.randn(2, 4, D), torch.randn(2, 4, D)
    causal = nn.Transformer.generate_square_subsequent_mask(4)
    want = m(tgt, memory, memory_mask=causal, memory_is_causal=True)
    got = from_torch(m)(tgt, memory, memory_is_causal=True)
    assert_close(got, want, atol=ATOL, rtol=0)


# --------------------------------------------------------------------------- what does not map


def _layer_with(**changes) -> nn.TransformerEncoderLayer:
    layer = nn.TransformerEncoderLayer(D, H, FF)
    for name, value in changes.items():
        setattr(layer, name, value)
    return layer


class _CustomForward(nn.TransformerEncoderLayer):
    def forward(self, src, *args, **kwargs):
        return 2 * super().forward(src, *args, **kwargs)


FROM_TORCH_ERRORS = [
    (lambda: nn.MultiheadAttention(D, H, kdim=8), "kdim=8"),
    (lambda: nn.MultiheadAttention(D, H, vdim=8), "vdim=8"),
    (lambda: nn.MultiheadAttention(D, H, add_bias_kv=True), "add_bias_kv"),
    (lambda: nn.MultiheadAttention(D, H, add_zero_attn=True), "add_zero_attn"),
    (lambda: nn.TransformerEncoderLayer(D, H, FF, activation=F.silu), "activation"),
    (lambda: _layer_with(norm1=nn.RMSNorm(D)), "norm1 is RMSNorm"),
    (lambda: _layer_with(norm2=nn.LayerNorm(D, eps=1e-3)), "norm2.eps=0.001"),
    (lambda: _layer_with(norm1=nn.LayerNorm(D, elementwise_affine=False)), "elementwise_affine"),
    (lambda: _layer_with(dropout1=nn.Dropout(0.5)), "dropout1.p=0.5"),
    (lambda: _layer_with(linear1=nn.Linear(D, FF, bias=False)), "linear1.bias=False"),
    (lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(D, H, FF), 2, nn.RMSNorm(D)), "norm"),
    (lambda: nn.Transformer(D, H, 1, 1, FF, custom_encoder=nn.Identity()), "encoder is Identity"),
    (lambda: _CustomForward(D, H, FF), "overrides TransformerEncoderLayer.forward"),
    (lambda: nn.Linear(D, D), "cannot convert Linear"),
]


@pytest.mark.parametrize("make, message", FROM_TORCH_ERRORS, ids=[m for _, m in FROM_TORCH_ERRORS])
def test_from_torch_rejects(make, message):
    with pytest.raises(ValueError, match=message):
        from_torch(make())


def test_from_torch_rejects_mixed_layers():
    m = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, H, FF), 3, enable_nested_tensor=False)
    m.layers[2].norm_first = True
    with pytest.raises(ValueError, match=r"layers\.2 differs .*norm_first"):
        from_torch(m)


def _heterogeneous_encoder() -> Encoder:
    enc = Encoder(2, D, H, FF)
    enc.blocks[1] = EncoderBlock(D, H, FF, activation="gelu")
    return enc


def _transformer_without_final_norm() -> TorchStyleTransformer:
    return TorchStyleTransformer(Encoder(1, D, H, FF), Decoder(1, D, H, FF, final_norm=True))


TO_TORCH_ERRORS = [
    (lambda: MultiHeadAttention(D, 4, n_kv_head=2), "n_kv_head=2"),
    (lambda: EncoderBlock(D, H, FF, norm="rms"), "ln1 is RMSNorm.*norm='layer'"),
    (lambda: EncoderBlock(D, H, FF, norm="batch"), "BatchNorm"),
    (lambda: EncoderBlock(D, H, FF, activation="swiglu"), "activation='swiglu'"),
    (lambda: EncoderBlock(D, H, FF, activation="gelu_tanh"), "activation='gelu_tanh'"),
    (lambda: EncoderBlock(D, H, FF, dropout=0.1, attn_dropout=0.2), "attn.dropout=0.2"),
    (lambda: DecoderBlock(D, H, FF, cross_attention=False), "cross_attention=False"),
    (lambda: Decoder(1, D, H, FF, cross_attention=False), "cross_attention=False"),
    (_heterogeneous_encoder, r"blocks\.1 differs .*activation"),
    (_transformer_without_final_norm, r"encoder\.ln_final is None"),
    (lambda: nn.Linear(D, D), "cannot convert Linear"),
]


@pytest.mark.parametrize("make, message", TO_TORCH_ERRORS, ids=[m for _, m in TO_TORCH_ERRORS])
def test_to_torch_rejects(make, message):
    with pytest.raises(ValueError, match=message):
        to_torch(make())


def test_adapter_rejects_bad_masks():
    adapter = from_torch(nn.MultiheadAttention(D, H, batch_first=True))
    x, z = torch.randn(2, 3, D), torch.randn(2, 5, D)
    with pytest.raises(ValueError, match=r"attn_mask must have shape \(T, S\) = \(3, 3\)"):
        adapter(x, x, x, attn_mask=torch.zeros(3, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="key_padding_mask has dtype torch.int64"):
        adapter(x, x, x, key_padding_mask=torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"key_padding_mask must have shape \(B, S\) = \(2, 5\)"):
        adapter(x, z, z, key_padding_mask=torch.zeros(2, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="is_causal=True without a mask"):
        adapter(x, z, z, is_causal=True)
    layer = from_torch(nn.TransformerDecoderLayer(D, H, FF))
    with pytest.raises(ValueError, match="memory_is_causal=True without a mask"):
        layer(torch.randn(3, 2, D), torch.randn(5, 2, D), memory_is_causal=True)
    with pytest.raises(ValueError, match="tgt_mask must have shape"):
        layer(torch.randn(3, 2, D), torch.randn(5, 2, D), tgt_mask=torch.zeros(5, 5))


def test_a_stack_with_an_attention_graph_is_refused_by_name():
    from glassformer import graphs
    from glassformer.nn import Encoder

    enc = Encoder(2, 16, 2, 32, graphs=[None, graphs.sliding_window(3)])
    with pytest.raises(ValueError, match="attends along the graph 'window:3'"):
        to_torch(enc)
