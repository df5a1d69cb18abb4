"""fast/packing.py: inference on a padded batch runs the position-wise work on the real tokens
only; every real token's output is exactly the unpacked one, the padding is zero."""

import pytest
import torch

from glassformer.fast.packing import Packing, hides_padding, packing_for
from glassformer.nn import Encoder, MultiHeadAttention, padding_mask

LENGTHS = torch.tensor([7, 3, 0, 5])  # a row with no real token at all
T = 7


def fast(enc, x, mask=None, *, causal=False, token_mask=None):
    """The stack as a caller that chose the fast paths runs it: packed when packing_for says."""
    packing = packing_for(enc, mask, token_mask, causal)
    return enc(x, mask, causal=causal, token_mask=token_mask, packing=packing)


def test_pack_and_unpack():
    token_mask = torch.arange(T) < LENGTHS[:, None]  # (B, T)
    p = Packing.from_mask(token_mask)
    x = torch.randn(4, T, 3)
    packed = p.pack(x)
    assert packed.shape == (15, 3)
    torch.testing.assert_close(packed, x[token_mask], rtol=0, atol=0)
    back = p.unpack(packed)
    assert torch.equal(back[token_mask], x[token_mask]) and back[~token_mask].abs().max() == 0


OPTIONS = [
    dict(),
    dict(norm_first=True),
    dict(norm="batch"),
    dict(norm="rms", activation="swiglu"),
    dict(n_kv_head=2),
    dict(attention_scores="shared"),
    dict(attention_scores="dot", norm_first=True),
]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(o) or "post-norm")
def test_encoder_inference_packs_and_changes_no_real_token(options):
    torch.manual_seed(0)
    enc = Encoder(2, 16, 4, 32, **options)
    if options.get("norm") == "batch":  # running statistics that are not the initial ones
        for m in enc.modules():
            if hasattr(m, "running_mean"):
                m.running_mean.normal_()
                m.running_var.uniform_(0.5, 2.0)
    enc.eval()
    x = torch.randn(4, T, 16)
    token_mask = torch.arange(T) < LENGTHS[:, None]
    mask = padding_mask(LENGTHS, T)
    with torch.no_grad():
        assert packing_for(enc, mask, token_mask) is not None
        packed = fast(enc, x, mask, token_mask=token_mask)
    plain = enc(x, mask, token_mask=token_mask).detach()  # the reference layout
    assert torch.isfinite(packed).all()
    torch.testing.assert_close(packed[token_mask], plain[token_mask], rtol=0, atol=1e-6)
    assert packed[~token_mask].abs().max() == 0
    assert plain[~token_mask].abs().max() > 0  # so the check above says something


def _masks(token_mask: torch.Tensor) -> dict[str, tuple[torch.Tensor, bool]]:
    """(mask, causal) pairs: all but "full" and "arbitrary" hide the padded keys (row 1 is
    padded at its end, so the causal mask hides them too)."""
    b, t = token_mask.shape
    pad = token_mask.view(b, 1, 1, t)
    arbitrary = torch.rand(b, 1, t, t, generator=torch.Generator().manual_seed(1)) < 0.6
    arbitrary |= torch.eye(t, dtype=torch.bool)  # every query sees itself
    return {
        "full": (torch.ones(t, t, dtype=torch.bool), False),
        "causal": (torch.ones(t, t, dtype=torch.bool), True),
        "padding": (pad, False),
        "causal padding": (pad, True),
        "arbitrary": (arbitrary, False),
        "arbitrary with padding": (arbitrary & pad, False),
    }


@pytest.mark.parametrize("dtype, atol", [(torch.float64, 1e-12), (torch.float32, 1e-6)])
@pytest.mark.parametrize("name", list(_masks(torch.ones(1, 1, dtype=torch.bool))))
def test_inference_equals_training_path_at_real_tokens_for_every_mask(name, dtype, atol):
    """Packing drops the padded tokens only under a mask that hides them from every real
    query; under a full, causal or graph mask they take part and the ordinary path runs."""
    torch.manual_seed(0)
    enc = Encoder(2, 8, 2, 16).to(dtype).eval()
    x = torch.randn(2, 5, 8, dtype=dtype)
    token_mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], dtype=torch.bool)
    mask, causal = _masks(token_mask)[name]
    with torch.enable_grad():
        a = enc(x, mask, causal=causal, token_mask=token_mask).detach()
    with torch.no_grad():
        packs = packing_for(enc, mask, token_mask, causal) is not None
        b = fast(enc, x, mask, causal=causal, token_mask=token_mask)
    assert packs == (name not in ("full", "arbitrary"))  # the others hide the padded keys
    torch.testing.assert_close(b[token_mask], a[token_mask], rtol=0, atol=atol)


def test_no_packing_without_padding_or_in_training():
    torch.manual_seed(0)
    enc = Encoder(1, 16, 4, 32)
    full = torch.ones(2, T, dtype=torch.bool)
    partial = full.clone()
    partial[1, 4:] = False
    mask = padding_mask(torch.tensor([T, 4]), T)
    enc.eval()
    with torch.no_grad():
        assert packing_for(enc, full[:, None, None], full) is None  # nothing to skip
        assert packing_for(enc, mask, partial) is not None
        enc.train()  # training mode (dropout, batch statistics): never packed
        assert packing_for(enc, mask, partial) is None


def test_multihead_attention_on_packed_tokens():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4).eval()
    x = torch.randn(4, T, 16)
    token_mask = torch.arange(T) < LENGTHS[:, None]
    mask = padding_mask(LENGTHS, T)
    p = Packing.from_mask(token_mask)
    want = mha(x, mask=mask)[token_mask]
    got = mha(p.pack(x), mask=mask, packing=p)  # (N, C)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-6)


def test_an_additive_mask_hides_the_padding_where_it_is_minus_infinity():
    """An additive float mask hides a key with -inf (0 and finite biases let it be seen)."""
    token_mask = torch.tensor([[True, True, False]])
    hidden = torch.zeros(1, 1, 1, 3).masked_fill(~token_mask.view(1, 1, 1, 3), float("-inf"))
    assert hides_padding(hidden, token_mask, causal=False)
    assert not hides_padding(torch.zeros(1, 1, 1, 3), token_mask, causal=False)
    assert hides_padding(token_mask.view(1, 1, 1, 3), token_mask, causal=False)  # bool


def test_no_packing_while_a_hook_is_attached():
    """A hook sees the (B, T, ·) layout the notes use, never the packed (N, ·) one."""
    torch.manual_seed(0)
    enc = Encoder(2, 16, 4, 32).eval()
    x = torch.randn(4, T, 16)
    token_mask = torch.arange(T) < LENGTHS[:, None]
    mask = padding_mask(LENGTHS, T)
    shapes = []
    handle = enc.blocks[1].hook_resid_pre.add_hook(lambda t, hook: shapes.append(t.shape))
    with torch.no_grad():
        hooked = fast(enc, x, mask, token_mask=token_mask)
    handle.remove()
    with torch.no_grad():
        packed = fast(enc, x, mask, token_mask=token_mask)
    assert shapes == [(4, T, 16)]
    assert packed[~token_mask].abs().max() == 0 < hooked[~token_mask].abs().max()
    torch.testing.assert_close(hooked[token_mask], packed[token_mask], rtol=0, atol=1e-6)


def test_each_pass_looks_at_its_own_masks():
    """No answer is kept between passes: a mask changed in place (or made in inference
    mode) is looked at again."""
    torch.manual_seed(0)
    enc = Encoder(3, 16, 4, 32).eval()
    x = torch.randn(4, T, 16)
    with torch.inference_mode():
        token_mask = torch.arange(T) < LENGTHS[:, None]
        mask = padding_mask(LENGTHS, T)
        first = fast(enc, x, mask, token_mask=token_mask)
        mask[1, ..., 4] = True  # row 1's real queries may see its padded key 4: no packing
        again = fast(enc, x, mask, token_mask=token_mask)
    assert first[~token_mask].abs().max() == 0 < again[~token_mask].abs().max()
