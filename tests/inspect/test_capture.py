"""capture(): the attention weights, masks, Q/K and residual stream it records are the ones the
model computed (Eq. 1-3, the residual wrappers), outputs are unchanged, nothing stays behind."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from glassformer import DecoderLM, EncoderDecoder, EncoderMLM
from glassformer.generation import generate
from glassformer.inspect import capture
from glassformer.nn import apply_rotary


def _expected_allowed(t: int, s: int, key_mask, causal: bool, b: int) -> torch.Tensor:
    """(B, 1, T, S): the causal and padding masks of the notes, built independently."""
    n, m = torch.arange(t)[:, None], torch.arange(s)[None, :]
    allowed = (m <= n + (s - t)) if causal else torch.ones(t, s, dtype=torch.bool)
    keys = torch.ones(b, s, dtype=torch.bool) if key_mask is None else key_mask.bool()
    return allowed[None, None] & keys[:, None, None, :]


def _run(kit, family: str, **overrides):
    """(model, recording, output, source key mask, target key mask) for one family."""
    x, mask = kit.right_padded()
    if family == "decoder":
        model = kit.build(DecoderLM, "tiny", **overrides)
        with capture(model) as rec:
            out = model(x, mask)
        return model, rec, out, None, mask
    if family == "llama":  # rotary, grouped-query attention, RMSNorm, left padding
        model = kit.build(DecoderLM, "tiny-llama", **overrides)
        left = mask.flip(1)
        with capture(model) as rec:
            out = model(x, left)
        return model, rec, out, None, left
    if family == "encoder":
        model = kit.build(EncoderMLM, "bert-base", **overrides)
        with capture(model) as rec:
            out = model(x, mask)
        return model, rec, out, mask, None
    model = kit.build(EncoderDecoder, "tiny-seq2seq", **overrides)
    tgt, tgt_mask = kit.right_padded(t=5, lengths=(5, 3))
    with capture(model) as rec:
        out = model(x, mask, decoder_input_ids=tgt, decoder_attention_mask=tgt_mask)
    return model, rec, out, mask, tgt_mask


@pytest.mark.parametrize("family", ["decoder", "llama", "encoder", "seq2seq"])
def test_attention_rows_sum_to_one_zero_where_masked_and_equal_eq1(kit, family):
    model, rec, _, src_mask, tgt_mask = _run(kit, family)
    assert len(rec.attention) == {"seq2seq": 6}.get(family, 2)
    for r in rec.attention:
        b, h, t, s = r.weights.shape
        assert (h, r.q.shape[-1]) == (model.config.n_head, model.config.head_dim)
        if r.kind == "cross" or r.stack == "encoder":
            want = _expected_allowed(t, s, src_mask, False, b)
        else:
            want = _expected_allowed(t, s, tgt_mask, True, b)
        assert torch.equal(r.allowed, want.expand(b, h, t, s))  # the mask as applied
        live = r.allowed.any(-1)  # rows with something to attend to
        sums = r.weights.sum(-1)
        assert_close(sums[live], torch.ones_like(sums[live]))
        assert torch.all(r.weights[~r.allowed] == 0)  # exactly 0 at masked positions
        assert torch.all(sums[~live] == 0)
        assert_close(r.weights, r.recompute(), atol=1e-12, rtol=0)  # Eq. (1) from Q, K


def test_queries_and_keys_are_the_projections_of_the_normed_stream(kit):
    model, rec, _, _, _ = _run(kit, "llama")
    block, r = model.blocks[1], rec.records()[1]
    x = block.ln1(rec.stream()[2].before)  # pre-norm: Q, K from Norm(X), Eq. (4)
    (wq, _), (wk, _), _ = block.attn.projection_weights()
    q = (x @ wq.T).view(2, 7, 4, 4).transpose(1, 2)  # (B, H, T, D)
    k = (x @ wk.T).view(2, 7, 2, 4).transpose(1, 2)  # (B, H_kv, T, D)
    real = rec.records()[0].allowed[:, 0, -1]  # (B, T) the real tokens (left padding)
    positions = (real.long().cumsum(-1) - 1).clamp(min=0)  # counted over the real tokens
    cos, sin = model.pos_embed.rotary(positions)
    real = real[:, None, :]  # (B, 1, T): the padded rows are read by nothing
    for got, projected in ((r.q, q), (r.k, k)):
        want = apply_rotary(projected, cos, sin)
        assert_close(got[real.expand(got.shape[:3])], want[real.expand(got.shape[:3])],
                     atol=1e-12, rtol=0)  # fmt: skip


@pytest.mark.parametrize("family", ["decoder", "encoder", "seq2seq"])
@pytest.mark.parametrize("norm_first", [True, False])
def test_each_update_is_the_sublayer_output(kit, family, norm_first):
    model, rec, out, src_mask, tgt_mask = _run(kit, family, norm_first=norm_first)
    memory = out.encoder_hidden_states
    for stack_name in rec.stacks:
        stack = getattr(model, stack_name) if isinstance(model, EncoderDecoder) else model
        keys = src_mask if stack_name == "encoder" else tgt_mask
        mask = None if keys is None else keys.bool()[:, None, None, :]
        steps = rec.stream(stack_name)
        assert len(steps) == len(stack.blocks) * (
            3 if stack_name == "decoder" and memory is not None else 2
        )
        for r, nxt in zip(steps, [*steps[1:], None], strict=True):
            block = stack.blocks[r.layer]
            norm = {
                "self_attn": block.ln1,
                "cross_attn": block.ln2,
                "ff": block.ln_mlp,
            }
            u = norm[r.sublayer](r.before) if norm_first else r.before
            if r.sublayer == "self_attn":
                want = block.attn(u, mask=mask, causal=stack_name == "decoder")
            elif r.sublayer == "cross_attn":
                memory_mask = src_mask.bool()[:, None, None, :]
                want = block.cross_attn(u, memory, memory_mask)
            else:
                want = block.mlp(u)
            assert_close(r.update, want, atol=1e-12, rtol=0)
            if norm_first:
                assert torch.equal(r.after, r.before + r.update)
            else:
                assert torch.equal(r.after, norm[r.sublayer](r.before + r.update))
            assert torch.equal(r.update_norm, r.update.norm(dim=-1))
            if nxt is not None:
                assert torch.equal(nxt.before, r.after)  # one stream, read and written in turn


@pytest.mark.parametrize("family", ["decoder", "encoder", "seq2seq"])
@pytest.mark.parametrize("norm_first", [True, False])
def test_last_entry_relates_exactly_to_hidden_states(kit, family, norm_first):
    model, rec, out, _, _ = _run(kit, family, norm_first=norm_first)
    hidden = {"decoder": out.hidden_states, "encoder": out.hidden_states}
    if family == "seq2seq":
        hidden["encoder"] = out.encoder_hidden_states
    for name in rec.stacks:
        stack = getattr(model, name) if isinstance(model, EncoderDecoder) else model
        last, end = rec.stream(name)[-1], rec.output(name)
        assert torch.equal(end.last, last.after)  # the stream before any final norm
        assert torch.equal(end.output, hidden[name])
        assert end.final_norm == (stack.ln_final is not None) == norm_first  # presets' default
        if norm_first:  # hidden_states = FinalNorm(last residual entry)
            assert torch.equal(stack.ln_final(last.after), hidden[name])
        else:  # post-norm: no final norm, the last entry is hidden_states itself
            assert torch.equal(last.after, hidden[name])
        assert torch.equal(rec.states(name)[-1], last.after)
        assert torch.equal(rec.states(name)[0], rec.stream(name)[0].before)


@pytest.mark.parametrize("family", ["decoder", "llama", "encoder", "seq2seq"])
def test_outputs_unchanged_and_nothing_left_behind(kit, family):
    x, mask = kit.right_padded()
    tgt = kit.ids(t=5)
    model, args = {
        "decoder": (kit.build(DecoderLM, "tiny", double=False), (x, mask)),
        "llama": (kit.build(DecoderLM, "tiny-llama", double=False), (x, mask)),
        "encoder": (kit.build(EncoderMLM, "bert-base", double=False), (x, mask)),
        "seq2seq": (kit.build(EncoderDecoder, "tiny-seq2seq", double=False), (x, mask, tgt)),
    }[family]
    before = model(*args)
    with capture(model) as rec:
        during = model(*args)
    after = model(*args)
    assert rec.attention and rec.residual
    assert_close(during.logits, before.logits, atol=1e-6, rtol=0)
    assert_close(during.hidden_states, before.hidden_states, atol=1e-6, rtol=0)
    assert torch.equal(after.logits, before.logits)
    for m in model.modules():
        assert not (m._forward_hooks or m._forward_pre_hooks or m._backward_hooks)


def test_not_capturing_keeps_the_fused_kernel_and_an_error_removes_the_hooks(kit, monkeypatch):
    import glassformer.nn.multihead as attend_module

    explicit = []  # one entry per attention call that formed A (the written-out path)
    real = attend_module.pattern
    monkeypatch.setattr(attend_module, "pattern", lambda a: explicit.append(1) or real(a))
    model = kit.build(DecoderLM, "tiny")
    model(kit.ids())
    assert explicit == []  # no weights computed when nobody looks
    with pytest.raises(RuntimeError, match="boom"), capture(model) as rec:
        model(kit.ids())
        raise RuntimeError("boom")
    assert len(explicit) == 2 and len(rec.attention) == 2
    assert not any(p.active for p in model.hook_points().values())
    model(kit.ids())
    assert len(explicit) == 2  # the fused kernel again
    with capture(model):  # and the model can be captured again
        model(kit.ids())
    assert len(explicit) == 4


def test_kv_cache_steps_record_their_new_rows(kit):
    model = kit.build(DecoderLM, "tiny-llama")
    x = kit.ids(t=9)
    with capture(model) as full:
        model(x)
    cache = model.new_cache()
    with capture(model) as rec:
        model(x[:, :5], cache=cache)
        for i in range(5, 9):
            model(x[:, i : i + 1], cache=cache)
    assert rec.calls() == 5
    for call, (t, s) in enumerate([(5, 5), (1, 6), (1, 7), (1, 8), (1, 9)]):
        r = rec.records(call=call)[0]
        assert r.weights.shape[-2:] == (t, s) and r.offset == s - t
        want = full.weights()[:, :, :, s - t : s, :s]  # the same rows of a full pass
        assert_close(rec.weights(call=call), want, atol=1e-12, rtol=0)
        assert_close(rec.states(call=call), full.states()[:, :, s - t : s], atol=1e-12, rtol=0)
        for layer, (r, f) in enumerate(zip(rec.records(call=call), full.records(), strict=True)):
            assert r.k.shape[2] == r.v.shape[2] == s, layer  # the cached keys and the new ones
            assert_close(r.k, f.k[:, :, :s], atol=1e-12, rtol=0)
            assert_close(r.v, f.v[:, :, :s], atol=1e-12, rtol=0)
            assert_close(r.recompute(), r.weights, atol=1e-12, rtol=0)  # Eq. (1) from Q, K
    assert_close(rec.full_weights(), full.weights(), atol=1e-12, rtol=0)
    assert torch.equal(rec.full_masks(), full.masks())


def test_generation_with_cache_is_captured_for_seq2seq(kit):
    model = kit.build(EncoderDecoder, "tiny-seq2seq")
    src = kit.ids(b=1, t=6)
    with capture(model) as rec:
        out = generate(model, src, max_new_tokens=4, temperature=0)
    assert (rec.calls("encoder"), rec.calls("decoder")) == (1, 4)
    with capture(model) as forced:  # teacher forcing on what was generated
        model(src, decoder_input_ids=out.sequences[:, :-1])
    for kind in ("self", "cross"):
        assert_close(rec.full_weights(kind, "decoder"), forced.weights(kind, "decoder"))
    for call in range(4):  # cross-attention keys: the source's, computed on the first call
        for r, f in zip(
            rec.records("cross", "decoder", call), forced.records("cross"), strict=True
        ):
            assert r.k.shape[2] == 6 and torch.equal(
                r.k, rec.records("cross", "decoder")[r.layer].k
            )
            assert_close(r.k, f.k, atol=1e-12, rtol=0)
            assert_close(r.v, f.v, atol=1e-12, rtol=0)


def test_keys_cached_before_the_capture_are_recorded(kit):
    model = kit.build(DecoderLM, "tiny")
    x, cache = kit.ids(t=6), model.new_cache()
    model(x[:, :4], cache=cache)  # the prompt, not captured
    with capture(model) as rec:
        model(x[:, 4:5], cache=cache)
        model(x[:, 5:6], cache=cache)
    with capture(model) as full:
        model(x)
    for call, s in ((0, 5), (1, 6)):
        r = rec.records(call=call)[1]
        assert r.k.shape == (2, 4, s, 4) and r.offset == s - 1
        assert_close(r.k, full.records()[1].k[:, :, :s], atol=1e-12, rtol=0)
        assert_close(r.v, full.records()[1].v[:, :, :s], atol=1e-12, rtol=0)
        assert_close(r.weights, full.weights()[1, :, :, s - 1 : s, :s], atol=1e-12, rtol=0)


def test_selection_errors_name_the_argument(kit):
    _, rec, _, _, _ = _run(kit, "seq2seq")
    with pytest.raises(ValueError, match=r"stack=None .*'encoder', 'decoder'"):
        rec.weights("self")
    assert rec.weights("cross").shape == (2, 2, 4, 5, 7)  # only the decoder has cross
    with pytest.raises(ValueError, match=r"call=3 is out of range"):
        rec.weights("self", "decoder", call=3)
    with pytest.raises(ValueError, match=r"kind='other' is not known"):
        rec.records("other")
    with pytest.raises(ValueError, match=r"stack='middle' has no"):
        rec.stream("middle")


def test_separate_passes_are_not_put_together(kit):
    model = kit.build(DecoderLM, "tiny")
    with capture(model) as rec:
        model(kit.ids(t=4))
        model(kit.ids(t=3))
    assert rec.calls() == 2 and rec.weights(call=1).shape[-2:] == (3, 3)
    with pytest.raises(ValueError, match=r"call 1 of 'decoder' starts at position 0, not 4"):
        rec.full_weights()
    with capture(model) as empty:
        pass
    with pytest.raises(ValueError, match=r"no self-attention recorded: run the model inside"):
        empty.weights()


def test_capture_refuses_nesting_and_models_without_stacks(kit):
    model = kit.build(DecoderLM, "tiny")
    with capture(model) as outer:
        with pytest.raises(ValueError, match="already being captured"), capture(model):
            pass
        model(kit.ids())
    assert len(outer.attention) == 2  # the outer capture keeps recording, once per layer
    linear = torch.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="no glassformer Encoder or Decoder"), capture(linear):
        pass


@pytest.mark.parametrize("causal", [True, False])
def test_a_bare_encoder_stack_is_captured_with_its_mask(causal):
    from glassformer.nn import Encoder

    torch.manual_seed(0)
    enc = Encoder(2, 8, 2, 16).double().eval()
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    with capture(enc) as rec:
        y = enc(x, causal=causal)
    assert rec.stacks == ("encoder",) and torch.equal(rec.output().output, y)
    assert [r.causal for r in rec.records()] == [causal, causal]
    later = torch.ones(5, 5, dtype=torch.bool).triu(1)  # m > n
    assert torch.equal(
        rec.masks()[..., later], torch.full_like(rec.masks()[..., later], not causal)
    )


def test_beam_search_records_the_keys_each_step_attended_to(kit):
    """Beam search reorders the KV cache between steps: each record's keys are the ones its
    queries met (its weights are the softmax of its own Q Kᵀ), not rows put together."""
    model = kit.build(DecoderLM, "tiny")
    with capture(model) as rec:
        generate(model, [[5, 6, 7], [8, 9]], max_new_tokens=5, num_beams=3, temperature=0)
    assert rec.calls() > 2
    for call in range(rec.calls()):
        for r in rec.records(call=call):
            assert r.k.shape[2] == r.weights.shape[-1]
            assert_close(r.recompute(), r.weights, atol=1e-10, rtol=0)
