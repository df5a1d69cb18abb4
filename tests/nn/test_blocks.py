"""Blocks and stacks: residual + norm placement, and the properties the notes state
(permutation equivariance, causality, padding independence, batch = one by one)."""

import itertools

import pytest
import torch

from glassformer.nn import (
    Decoder,
    DecoderBlock,
    Encoder,
    EncoderBlock,
    RotaryEmbedding,
    padding_mask,
    run_blocks,
)

torch.manual_seed(0)
C, H, FF = 16, 4, 32


def x_(b=3, t=6):
    return torch.randn(b, t, C, dtype=torch.float64)


@pytest.mark.parametrize("norm_first", [True, False])
def test_encoder_block_is_residual_around_each_sublayer(norm_first):
    blk = EncoderBlock(C, H, FF, norm_first=norm_first, activation="gelu").double()
    x = x_()
    attn = lambda u: blk.attn(u)  # noqa: E731
    if norm_first:  # X + F(Norm(X)), the notes' pseudocode
        y = x + attn(blk.ln1(x))
        y = y + blk.mlp(blk.ln2(y))
    else:  # Norm(X + F(X)), Vaswani et al.
        y = blk.ln1(x + attn(x))
        y = blk.ln2(y + blk.mlp(y))
    torch.testing.assert_close(blk(x), y)


@pytest.mark.parametrize("norm_first", [True, False])
def test_decoder_block_order_self_cross_ff(norm_first):
    blk = DecoderBlock(C, H, FF, norm_first=norm_first).double()
    x, z = x_(t=4), x_(t=7)
    mm = padding_mask(torch.tensor([7, 3, 5]))
    sa = lambda u: blk.attn(u, causal=True)  # noqa: E731
    ca = lambda u: blk.cross_attn(u, z, mm)  # noqa: E731
    y = x
    for norm, f in ((blk.ln1, sa), (blk.ln2, ca), (blk.ln3, blk.mlp)):
        y = y + f(norm(y)) if norm_first else norm(y + f(y))
    torch.testing.assert_close(blk(x, memory=z, memory_mask=mm), y)


@pytest.mark.parametrize("norm", ["layer", "rms", "batch"])
def test_encoder_without_positions_is_permutation_equivariant(norm):
    enc = Encoder(2, C, H, FF, norm=norm, norm_first=True).double().eval()
    x = x_()
    perm = torch.randperm(6)
    torch.testing.assert_close(enc(x[:, perm]), enc(x)[:, perm])


def test_causal_mask_breaks_equivariance():
    enc = Encoder(1, C, H, FF).double()
    x = x_()
    perm = torch.tensor([5, 4, 3, 2, 1, 0])
    assert not torch.allclose(enc(x[:, perm], causal=True), enc(x, causal=True)[:, perm])


@pytest.mark.parametrize("stack", ["gpt", "encoder_causal", "encoder_decoder"])
def test_future_tokens_never_change_earlier_outputs(stack):
    x, z = x_(t=8), x_(t=5)
    if stack == "gpt":
        model = Decoder(2, C, H, FF, cross_attention=False, norm_first=True).double()
        run = lambda u: model(u)  # noqa: E731
    elif stack == "encoder_causal":
        model = Encoder(2, C, H, FF).double()
        run = lambda u: model(u, causal=True)  # noqa: E731
    else:
        model = Decoder(2, C, H, FF).double()
        run = lambda u: model(u, z)  # noqa: E731
    y = run(x)
    for n in range(8):
        x2 = x.clone()
        x2[:, n + 1 :] = torch.randn_like(x2[:, n + 1 :]) * 10
        torch.testing.assert_close(run(x2)[:, : n + 1], y[:, : n + 1], atol=1e-12, rtol=0)


@pytest.mark.parametrize("norm", ["layer", "rms", "batch"])
@pytest.mark.parametrize("train", [True, False])
def test_padded_tokens_never_change_real_outputs(norm, train):
    lengths = torch.tensor([6, 2, 4])
    real = padding_mask(lengths)[:, 0, 0]  # (B, T)
    enc = Encoder(2, C, H, FF, norm=norm).double().train(train)
    dec = Decoder(2, C, H, FF, norm=norm).double().train(train)
    x, tgt = x_(), x_(t=5)
    tgt_real = torch.ones(3, 5, dtype=torch.bool)

    def run(src):
        mem = enc(src, padding_mask(lengths), token_mask=real)
        return mem, dec(tgt, mem, memory_mask=padding_mask(lengths), token_mask=tgt_real)

    mem, out = run(x)
    x2 = torch.where(real[..., None], x, torch.randn_like(x) * 100)
    mem2, out2 = run(x2)
    torch.testing.assert_close(mem2[real], mem[real], atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(out2, out, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("norm_first", [True, False])
def test_batch_equals_examples_one_by_one(norm_first):
    lengths = [6, 2, 4]
    enc = Encoder(2, C, H, FF, norm_first=norm_first).double()
    dec = Decoder(2, C, H, FF, norm_first=norm_first).double()
    x, tgt = x_(), x_(t=5)
    mask = padding_mask(torch.tensor(lengths))
    mem = enc(x, mask)
    out = dec(tgt, mem, memory_mask=mask)
    for b, n in enumerate(lengths):
        mem_b = enc(x[b : b + 1, :n])
        torch.testing.assert_close(mem[b, :n], mem_b[0])
        torch.testing.assert_close(out[b], dec(tgt[b : b + 1], mem_b)[0])


def test_fully_masked_rows_are_finite_through_a_stack():
    enc = Encoder(2, C, H, FF, norm_first=True)
    x = torch.randn(2, 4, C)
    y = enc(x, padding_mask(torch.tensor([0, 0]), 4))
    assert torch.isfinite(y).all()
    y.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in enc.parameters() if p.grad is not None)


@pytest.mark.parametrize("cross", [True, False])
def test_decoder_cache_equals_full_recompute(cross):
    dec = Decoder(3, C, H, FF, n_kv_head=2, cross_attention=cross, norm_first=True).double()
    rope = RotaryEmbedding(C // H, 32)
    x, z = x_(t=7), (x_(t=5) if cross else None)
    mm = padding_mask(torch.tensor([5, 2, 4])) if cross else None
    full = dec(x, z, memory_mask=mm, rope=rope.rotary(torch.arange(7)))
    cache = dec.new_cache(max_len=16)
    outs = []
    for a, b in itertools.pairwise([0, 3, 4, 5, 7]):
        tables = rope.rotary(torch.arange(cache.length, cache.length + b - a))
        outs.append(dec(x[:, a:b], z, memory_mask=mm, rope=tables, cache=cache))
    torch.testing.assert_close(torch.cat(outs, 1), full)
    assert cache.length == 7


def test_final_norm_defaults_to_pre_norm_and_memory_is_checked():
    assert Encoder(1, C, H, FF, norm_first=True).ln_final is not None
    assert Encoder(1, C, H, FF, norm_first=False).ln_final is None
    assert Decoder(1, C, H, FF, final_norm=True).ln_final is not None
    with pytest.raises(ValueError, match="memory given=False"):
        Decoder(1, C, H, FF)(torch.randn(1, 2, C))
    with pytest.raises(ValueError, match="memory given=True"):
        Decoder(1, C, H, FF, cross_attention=False)(torch.randn(1, 2, C), torch.randn(1, 2, C))
    with pytest.raises(ValueError, match="n_layer must be >= 0"):
        Encoder(-1, C, H, FF)


@pytest.mark.parametrize(
    "options, words",
    [
        (dict(activation="tanh"), ["activation", "'tanh'"]),
        (dict(norm="group"), ["norm", "'group'"]),
        (dict(n_kv_head=3), ["n_kv_head=3"]),
    ],
)
def test_blocks_reject_bad_options(options, words):
    with pytest.raises(ValueError) as err:
        Encoder(1, C, H, FF, **options)
    for word in words:
        assert word in str(err.value)


@pytest.mark.parametrize("norm_first", [True, False])
def test_block_dropout_acts_in_training_only(norm_first):
    """The residual branches' and the MLP's dropout (attention's off here): a fresh random
    mask each call in train mode, nothing in eval mode (= the block without dropout)."""
    torch.manual_seed(1)
    blk = EncoderBlock(C, H, FF, norm_first=norm_first, dropout=0.5, attn_dropout=0.0).double()
    plain = EncoderBlock(C, H, FF, norm_first=norm_first).double()
    plain.load_state_dict(blk.state_dict())
    x = x_()
    a, b = blk(x), blk(x)
    assert not torch.allclose(a, b)
    assert not torch.allclose(a, plain(x))
    blk.eval()
    torch.testing.assert_close(blk(x), plain(x), rtol=0, atol=0)


def test_run_blocks_from_a_start_layer_is_the_rest_of_the_loop():
    blocks = torch.nn.ModuleList(
        DecoderBlock(C, H, FF, cross_attention=False, norm_first=True) for _ in range(3)
    ).double().eval()
    x = x_()
    after_one = blocks[0](x)  # the stream entering block 1
    torch.testing.assert_close(run_blocks(blocks, after_one, start=1), run_blocks(blocks, x))
    assert run_blocks(blocks, x, start=3) is x  # no block left
    with pytest.raises(ValueError, match=r"start=4 is out of range; the stack has 3 blocks"):
        run_blocks(blocks, x, start=4)
