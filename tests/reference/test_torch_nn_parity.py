"""Parity of glassformer.interop.from_torch with torch.nn: outputs and gradients.

Every test builds a small torch.nn module with random weights (biases and norm parameters
perturbed so none is trivial), converts it, calls both with the same torch.nn-style arguments
and asserts max |difference| <= 1e-5 (float32) for the output and for the gradients with
respect to every input and every parameter (matched by ``torch_key_map``).

Train mode runs with dropout 0 (identical computation); eval mode runs with dropout 0.1, which
both libraries must switch off. Gradients are enabled, so torch.nn takes its reference
("slow") path; the fast paths are compared in test_torch_nn_convert.py.

The options of each module are crossed pairwise, not in full (1,057 cases, 128 pairwise)
(``pairwise.py``): every value of every option appears, and so does every pair of values of two
options, because that is how the options interact:

- the mask case with ``batch_first``: torch.nn's per-head (B·H, T, S) masks and its padding
  masks are laid out by batch, while sequence-first inputs put the batch second;
- the mask case with the returned weights: averaged or per-head weights must show the masked
  keys as 0, and ``is_causal`` is only a hint that comes with the mask;
- the mask case with ``norm_first`` and the final norm: padded positions still pass through
  the norms, and their gradients must match where they are masked out;
- ``train`` with the weights: eval mode must switch dropout off on the returned weights as
  well as on the output;
- ``bias`` with ``norm_first`` and ``activation``: ``bias=False`` removes the biases of the
  linear maps and of the norms, so where the norm sits changes what the feed-forward sees.

Each option acts on its own step of the computation (projections, masks, norm placement,
activation, layout), so a mistake shows with at most one other option set.
"""

from __future__ import annotations

import itertools

import pytest
import torch
from torch import Tensor, nn
from torch.testing import assert_close

from glassformer.interop import from_torch, torch_key_map

from .pairwise import pairwise

pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")

D, FF = 16, 32
ATOL = 1e-5


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """The tensors here are tiny: intra-op threads only add overhead (and stall on a busy
    machine). Restored afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def _seed():
    """torch.nn initialises its weights from the global generator: fix it per test."""
    torch.manual_seed(0)


def perturb(module: nn.Module, seed: int) -> nn.Module:
    """Add noise to every parameter: zero biases and unit norm weights would hide mistakes."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=gen))
    return module


def torch_masks(case: str, b: int, h: int, t: int, s: int, gen: torch.Generator):
    """(attn_mask, key_padding_mask, is_causal) in torch.nn's conventions.

    Every query keeps at least one key (key 0 is never padded, the diagonal is never masked),
    so torch.nn has no NaN rows here; fully masked rows have their own tests.
    """
    lengths = torch.randint(1, s + 1, (b,), generator=gen)
    padding = torch.arange(s) >= lengths[:, None]  # (B, S) True = padding
    causal = torch.ones(t, s, dtype=torch.bool).triu(1)  # (T, S) True = not allowed
    if case == "none":
        return None, None, False
    if case == "causal_bool":
        return causal, None, False
    if case == "causal_float":
        return nn.Transformer.generate_square_subsequent_mask(t), None, False
    if case == "is_causal":  # torch.nn's is_causal is a hint that comes with the mask
        return nn.Transformer.generate_square_subsequent_mask(t), None, True
    if case == "padding_bool":
        return None, padding, False
    if case == "padding_float":
        return None, torch.zeros(b, s).masked_fill(padding, float("-inf")), False
    if case == "causal_padding":
        return causal, padding, False
    if case == "per_head":  # (B·H, T, S) boolean, one mask per example and head
        m = torch.rand(b * h, t, s, generator=gen) < 0.4
        m[:, :, 0] = False
        return m, None, False
    if case == "additive":  # arbitrary float biases plus a float padding mask
        bias = torch.randn(t, s, generator=gen)
        return bias, torch.zeros(b, s).masked_fill(padding, float("-inf")), False
    raise AssertionError(case)


SELF_CASES = [
    "none",
    "causal_bool",
    "causal_float",
    "is_causal",
    "padding_bool",
    "padding_float",
    "causal_padding",
    "per_head",
    "additive",
]
CROSS_CASES = ["none", "padding_bool", "padding_float", "per_head", "additive"]
# (B, T) per self-attention case: batch sizes 1-3, lengths 1-9
SHAPES = dict(
    zip(
        SELF_CASES,
        [(2, 5), (1, 7), (3, 4), (2, 9), (3, 6), (1, 1), (2, 8), (3, 3), (1, 5)],
        strict=True,
    )
)
BOOL = [True, False]
WEIGHTS = ["none", "average", "per_head"]
ACTIVATIONS = ["relu", "gelu"]


def pairs(**options: list) -> list:
    """The pairwise cases of ``options`` as pytest parameters, named by their values."""

    def name(value) -> str:
        if isinstance(value, tuple):
            return "(" + ",".join(map(name, value)) + ")"
        return value if isinstance(value, str) else repr(value)

    return [pytest.param(*row, id="-".join(map(name, row))) for row in pairwise(**options)]


def layout(x: Tensor, batch_first: bool) -> Tensor:
    """(B, T, C) -> torch.nn's layout."""
    return x if batch_first else x.transpose(0, 1).contiguous()


def check_parity(torch_module, adapter, args, kwargs, seed=0):
    """Forward both, compare outputs; backward a random cotangent, compare every gradient."""
    torch_module.zero_grad(set_to_none=True)
    t_args = [a.clone().requires_grad_() for a in args]
    g_args = [a.clone().requires_grad_() for a in args]
    t_out, g_out = torch_module(*t_args, **kwargs), adapter(*g_args, **kwargs)
    t_out = t_out if isinstance(t_out, tuple) else (t_out,)
    g_out = g_out if isinstance(g_out, tuple) else (g_out,)
    gen = torch.Generator().manual_seed(seed)
    t_loss = g_loss = 0.0
    for t, g in zip(t_out, g_out, strict=True):
        if t is None:
            assert g is None
            continue
        assert g.shape == t.shape
        assert_close(g, t, atol=ATOL, rtol=0)
        cot = torch.randn(t.shape, generator=gen) / t.numel() ** 0.5  # O(1) loss and gradients
        t_loss, g_loss = t_loss + (t * cot).sum(), g_loss + (g * cot).sum()
    t_loss.backward()
    g_loss.backward()
    for t, g in zip(t_args, g_args, strict=True):
        assert_close(g.grad, t.grad, atol=ATOL, rtol=0)
    key_map = torch_key_map(torch_module)
    t_params = dict(torch_module.named_parameters())
    g_params = dict(adapter.module.named_parameters())
    assert set(key_map) == set(t_params)
    assert {g for g_names in key_map.values() for g in g_names} == set(g_params)
    for t_name, g_names in key_map.items():  # in_proj_weight: [q; k; v]_proj by rows
        g = torch.cat([g_params[n].grad for n in g_names])
        assert_close(g, t_params[t_name].grad, atol=ATOL, rtol=0)


def modes(train: bool) -> tuple[float, bool]:
    """(dropout, training): train with p = 0, eval with p = 0.1 (must be switched off)."""
    return (0.0, True) if train else (0.1, False)


# --------------------------------------------------------------------------- MultiheadAttention


@pytest.mark.parametrize(
    ("case", "train", "bias", "batch_first", "weights"),
    pairs(case=SELF_CASES, train=BOOL, bias=BOOL, batch_first=BOOL, weights=WEIGHTS),
)
def test_mha_self_attention(case, train, bias, batch_first, weights):
    b, t = SHAPES[case]
    h = 4
    dropout, training = modes(train)
    m = nn.MultiheadAttention(D, h, dropout=dropout, bias=bias, batch_first=batch_first)
    perturb(m, 1).train(training)
    gen = torch.Generator().manual_seed(2)
    attn_mask, padding, is_causal = torch_masks(case, b, h, t, t, gen)
    x = layout(torch.randn(b, t, D, generator=gen), batch_first)
    kwargs = dict(
        attn_mask=attn_mask,
        key_padding_mask=padding,
        is_causal=is_causal,
        need_weights=weights != "none",
        average_attn_weights=weights == "average",
    )
    adapter = from_torch(m)
    # query is key is value: pass one tensor three times, as torch.nn's self-attention does
    t_x, g_x = x.clone().requires_grad_(), x.clone().requires_grad_()
    t_out, t_w = m(t_x, t_x, t_x, **kwargs)
    g_out, g_w = adapter(g_x, g_x, g_x, **kwargs)
    assert_close(g_out, t_out, atol=ATOL, rtol=0)
    if weights == "none":
        assert g_w is None and t_w is None
    else:
        assert_close(g_w, t_w, atol=ATOL, rtol=0)
    cot = torch.randn(t_out.shape, generator=gen) / t_out.numel() ** 0.5
    (t_out * cot).sum().backward()
    (g_out * cot).sum().backward()
    assert_close(g_x.grad, t_x.grad, atol=ATOL, rtol=0)
    g_params = dict(adapter.module.named_parameters())
    for t_name, g_names in torch_key_map(m).items():  # in_proj_weight: [q; k; v]_proj by rows
        g = torch.cat([g_params[n].grad for n in g_names])
        assert_close(g, m.get_parameter(t_name).grad, atol=ATOL, rtol=0)


@pytest.mark.parametrize(
    ("case", "separate", "train", "batch_first", "weights"),
    pairs(case=CROSS_CASES, separate=BOOL, train=BOOL, batch_first=BOOL, weights=WEIGHTS),
)
def test_mha_cross_attention(case, separate, train, batch_first, weights):
    b, t = SHAPES[case]
    s = t + 2
    h = 2
    dropout, training = modes(train)
    m = nn.MultiheadAttention(D, h, dropout=dropout, bias=not separate, batch_first=batch_first)
    perturb(m, 3).train(training)
    gen = torch.Generator().manual_seed(4)
    attn_mask, padding, _ = torch_masks(case, b, h, t, s, gen)
    q = layout(torch.randn(b, t, D, generator=gen), batch_first)
    k = layout(torch.randn(b, s, D, generator=gen), batch_first)
    v = layout(torch.randn(b, s, D, generator=gen), batch_first)
    kwargs = dict(
        attn_mask=attn_mask,
        key_padding_mask=padding,
        need_weights=weights != "none",
        average_attn_weights=weights == "average",
    )
    adapter = from_torch(m)
    if separate:
        check_parity(m, adapter, [q, k, v], kwargs)
        return
    # key is value: torch.nn and the adapter both see the same tensor twice
    t_q, t_kv = q.clone().requires_grad_(), k.clone().requires_grad_()
    g_q, g_kv = q.clone().requires_grad_(), k.clone().requires_grad_()
    t_out, t_w = m(t_q, t_kv, t_kv, **kwargs)
    g_out, g_w = adapter(g_q, g_kv, g_kv, **kwargs)
    assert_close(g_out, t_out, atol=ATOL, rtol=0)
    if t_w is not None:
        assert_close(g_w, t_w, atol=ATOL, rtol=0)
    cot = torch.randn(t_out.shape, generator=gen) / t_out.numel() ** 0.5
    (t_out * cot).sum().backward()
    (g_out * cot).sum().backward()
    assert_close(g_q.grad, t_q.grad, atol=ATOL, rtol=0)
    assert_close(g_kv.grad, t_kv.grad, atol=ATOL, rtol=0)
    g_params = dict(adapter.module.named_parameters())
    for t_name, g_names in torch_key_map(m).items():  # in_proj_weight: [q; k; v]_proj by rows
        g = torch.cat([g_params[n].grad for n in g_names])
        assert_close(g, m.get_parameter(t_name).grad, atol=ATOL, rtol=0)


# --------------------------------------------------------------------------- layers


@pytest.mark.parametrize(
    ("case", "norm_first", "activation", "bias", "train", "batch_first"),
    pairs(
        case=SELF_CASES,
        norm_first=BOOL,
        activation=ACTIVATIONS,
        bias=BOOL,
        train=BOOL,
        batch_first=BOOL,
    ),
)
def test_encoder_layer(case, norm_first, activation, bias, train, batch_first):
    b, t = SHAPES[case]
    h = 2
    dropout, training = modes(train)
    m = nn.TransformerEncoderLayer(
        D, h, FF, dropout, activation, 1e-6, batch_first, norm_first, bias
    )
    perturb(m, 5).train(training)
    gen = torch.Generator().manual_seed(6)
    attn_mask, padding, is_causal = torch_masks(case, b, h, t, t, gen)
    x = layout(torch.randn(b, t, D, generator=gen), batch_first)
    kwargs = dict(src_mask=attn_mask, src_key_padding_mask=padding, is_causal=is_causal)
    check_parity(m, from_torch(m), [x], kwargs)


DECODER_CASES = [  # (self-attention case, cross-attention case)
    ("none", "none"),
    ("causal_float", "padding_bool"),
    ("is_causal", "padding_float"),
    ("causal_padding", "padding_bool"),
    ("padding_float", "additive"),
    ("per_head", "per_head"),
    ("causal_bool", "none"),
]


@pytest.mark.parametrize(
    ("cases", "norm_first", "activation", "bias", "train", "batch_first"),
    pairs(
        cases=DECODER_CASES,
        norm_first=BOOL,
        activation=ACTIVATIONS,
        bias=BOOL,
        train=BOOL,
        batch_first=BOOL,
    ),
)
def test_decoder_layer(cases, norm_first, activation, bias, train, batch_first):
    b, t = SHAPES[cases[0]]
    s = 1 + (3 * t) % 8  # source lengths 1-8, different from the target's
    h = 2
    dropout, training = modes(train)
    m = nn.TransformerDecoderLayer(
        D, h, FF, dropout, activation, 1e-5, batch_first, norm_first, bias
    )
    perturb(m, 7).train(training)
    gen = torch.Generator().manual_seed(8)
    tgt_mask, tgt_padding, tgt_is_causal = torch_masks(cases[0], b, h, t, t, gen)
    memory_mask, memory_padding, _ = torch_masks(cases[1], b, h, t, s, gen)
    tgt = layout(torch.randn(b, t, D, generator=gen), batch_first)
    memory = layout(torch.randn(b, s, D, generator=gen), batch_first)
    kwargs = dict(
        tgt_mask=tgt_mask,
        memory_mask=memory_mask,
        tgt_key_padding_mask=tgt_padding,
        memory_key_padding_mask=memory_padding,
        tgt_is_causal=tgt_is_causal,
    )
    check_parity(m, from_torch(m), [tgt, memory], kwargs)


# --------------------------------------------------------------------------- stacks


STACK_CONFIGS = [  # (norm_first, activation, bias, final norm): each pair of values once
    (False, "relu", True, False),
    (False, "gelu", False, True),
    (True, "gelu", True, True),
    (True, "relu", False, False),
]


@pytest.mark.parametrize(
    ("case", "config", "train", "batch_first"),
    pairs(
        case=["none", "causal_float", "is_causal", "causal_padding", "padding_float", "per_head"],
        config=STACK_CONFIGS,
        train=BOOL,
        batch_first=BOOL,
    ),
)
def test_encoder(case, config, train, batch_first):
    norm_first, activation, bias, final = config
    b, t = SHAPES[case]
    h = 2
    dropout, training = modes(train)
    layer = nn.TransformerEncoderLayer(
        D, h, FF, dropout, activation, 1e-5, batch_first, norm_first, bias
    )
    norm = nn.LayerNorm(D, eps=1e-6, bias=bias) if final else None
    m = perturb(nn.TransformerEncoder(layer, 2, norm), 9).train(training)
    gen = torch.Generator().manual_seed(10)
    attn_mask, padding, is_causal = torch_masks(case, b, h, t, t, gen)
    x = layout(torch.randn(b, t, D, generator=gen), batch_first)
    kwargs = dict(mask=attn_mask, src_key_padding_mask=padding, is_causal=is_causal or None)
    check_parity(m, from_torch(m), [x], kwargs)


@pytest.mark.parametrize(
    ("cases", "config", "train", "batch_first"),
    pairs(cases=DECODER_CASES[:5], config=STACK_CONFIGS, train=BOOL, batch_first=BOOL),
)
def test_decoder(cases, config, train, batch_first):
    norm_first, activation, bias, final = config
    b, t = SHAPES[cases[0]]
    s = 1 + (5 * t) % 9
    h = 4
    dropout, training = modes(train)
    layer = nn.TransformerDecoderLayer(
        D, h, FF, dropout, activation, 1e-5, batch_first, norm_first, bias
    )
    norm = nn.LayerNorm(D, bias=bias) if final else None
    m = perturb(nn.TransformerDecoder(layer, 2, norm), 11).train(training)
    gen = torch.Generator().manual_seed(12)
    tgt_mask, tgt_padding, tgt_is_causal = torch_masks(cases[0], b, h, t, t, gen)
    memory_mask, memory_padding, _ = torch_masks(cases[1], b, h, t, s, gen)
    tgt = layout(torch.randn(b, t, D, generator=gen), batch_first)
    memory = layout(torch.randn(b, s, D, generator=gen), batch_first)
    kwargs = dict(
        tgt_mask=tgt_mask,
        memory_mask=memory_mask,
        tgt_key_padding_mask=tgt_padding,
        memory_key_padding_mask=memory_padding,
        tgt_is_causal=tgt_is_causal or None,
    )
    check_parity(m, from_torch(m), [tgt, memory], kwargs)


@pytest.mark.parametrize(
    ("padding", "config", "train", "batch_first"),
    pairs(padding=["bool", "float"], config=STACK_CONFIGS, train=BOOL, batch_first=BOOL),
)
def test_transformer(padding, config, train, batch_first):
    """Encoder with a source padding mask, causal decoder, cross-attention with the memory
    key padding mask (the source's padding)."""
    norm_first, activation, bias, _ = config
    b, s, t, h = 3, 7, 5, 2
    dropout, training = modes(train)
    m = nn.Transformer(
        D, h, 2, 2, FF, dropout, activation, None, None, 1e-5, batch_first, norm_first, bias
    )
    perturb(m, 13).train(training)
    gen = torch.Generator().manual_seed(14)
    _, src_padding, _ = torch_masks(f"padding_{padding}", b, h, s, s, gen)
    _, tgt_padding, _ = torch_masks(f"padding_{padding}", b, h, t, t, gen)
    causal = nn.Transformer.generate_square_subsequent_mask(t)
    if padding == "bool":
        causal = causal.isinf()
    src = layout(torch.randn(b, s, D, generator=gen), batch_first)
    tgt = layout(torch.randn(b, t, D, generator=gen), batch_first)
    kwargs = dict(
        tgt_mask=causal,
        src_key_padding_mask=src_padding,
        tgt_key_padding_mask=tgt_padding,
        memory_key_padding_mask=src_padding,
        tgt_is_causal=True,
    )
    check_parity(m, from_torch(m), [src, tgt], kwargs)


# --------------------------------------------------------------------------- unbatched inputs


def test_unbatched_inputs():
    """2-D (T, C) inputs with 1-D key padding masks and (H, T, S) per-head masks, as torch.nn
    accepts them; batch_first is ignored for unbatched inputs."""
    gen = torch.Generator().manual_seed(15)
    t, s, h = 6, 4, 2
    padding = torch.tensor([False, False, True, False, False, True])
    per_head = torch.rand(h, t, t, generator=gen) < 0.3
    per_head[:, :, 0] = False
    x, z = torch.randn(t, D, generator=gen), torch.randn(s, D, generator=gen)
    for batch_first in (True, False):
        mha = perturb(nn.MultiheadAttention(D, h, batch_first=batch_first), 16)
        for weights in (True, False):
            kw = dict(key_padding_mask=padding, attn_mask=per_head, average_attn_weights=weights)
            check_parity(mha, from_torch(mha), [x, x.clone(), x.clone()], kw)
        enc = perturb(nn.TransformerEncoderLayer(D, h, FF, 0.0, batch_first=batch_first), 17)
        check_parity(enc, from_torch(enc), [x], dict(src_key_padding_mask=padding))
        check_parity(enc, from_torch(enc), [x], dict(src_mask=per_head))
        dec = perturb(nn.TransformerDecoderLayer(D, h, FF, 0.0, batch_first=batch_first), 18)
        kw = dict(
            tgt_mask=nn.Transformer.generate_square_subsequent_mask(t),
            memory_key_padding_mask=torch.tensor([False, True, False, True]),
            tgt_is_causal=True,
        )
        check_parity(dec, from_torch(dec), [x, z], kw)
        full = perturb(nn.Transformer(D, h, 1, 1, FF, 0.0, batch_first=batch_first), 19)
        kw = dict(src_key_padding_mask=padding[:s], memory_key_padding_mask=padding[:s])
        check_parity(full, from_torch(full), [z, x], kw)


# --------------------------------------------------------------------------- the cases


@pytest.mark.parametrize(
    "options",
    [
        dict(a=[1, 2, 3]),
        dict(a=SELF_CASES, b=BOOL, c=BOOL, d=BOOL, e=WEIGHTS),
        dict(a=DECODER_CASES, b=BOOL, c=ACTIVATIONS, d=BOOL, e=BOOL, f=BOOL),
        dict(a=[1, 2], b=[3, 4, 5], c=["x", "y", "z", "w"]),
    ],
    ids=["one", "mha", "decoder", "small"],
)
def test_the_cases_hold_every_pair_of_option_values(options):
    rows = pairwise(**options)
    values = list(options.values())
    assert all(len(row) == len(values) for row in rows)
    assert all(row[i] in values[i] for row in rows for i in range(len(values)))
    for i, j in itertools.combinations(range(len(values)), 2):
        seen = {(row[i], row[j]) for row in rows}
        assert seen == set(itertools.product(values[i], values[j])), (i, j)
    for i, v in enumerate(values):
        assert {row[i] for row in rows} == set(v)
    largest = max([len(a) * len(b) for a, b in itertools.combinations(values, 2)], default=0)
    assert len(rows) <= max(largest, len(values[0])) * 5 // 4  # near the fewest possible
    assert pairwise(**options) == rows  # the same cases every run
