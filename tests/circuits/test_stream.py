"""The residual stream as a sum (glassformer.circuits.stream, norms, components): the labelled
terms sum to the cached stream in every family, pre- and post-norm (the norms in the stream
frozen), with padding, rotary positions, GQA and BatchNorm, for glassformer's models and
converted Hugging Face ones; each term is the cache's own tensor where there is one."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from glassformer.circuits import (
    Components,
    accumulated_resid,
    circuit_cache,
    decompose_resid,
    freeze_norm,
    stack_head_results,
)
from glassformer.models import DecoderLM, EncoderClassifier, EncoderDecoder, EncoderMLM
from glassformer.models.hooked import ActivationCache
from glassformer.nn.norms import BatchNorm, LayerNorm, RMSNorm

from .conftest import huggingface, perturbed

V, L, H = 29, 2, 4
TOL = dict(atol=1e-5, rtol=0.0)
MASK = torch.tensor([[0, 0, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0, 0]])

CASES = {  # name: (class, config options)
    "decoder pre-norm learned gqa": (DecoderLM, dict(family="decoder", n_kv_head=2)),
    "decoder pre-norm rms rotary no-bias": (
        DecoderLM,
        dict(family="decoder", norm="rms", positional="rotary", bias=False, activation="swiglu"),
    ),
    "decoder post-norm rotary": (
        DecoderLM,
        dict(family="decoder", norm_first=False, positional="rotary"),
    ),
    "mlm post-norm ln_embed token types": (
        EncoderMLM,
        dict(
            family="encoder",
            norm_first=False,
            positional="sinusoidal",
            embed_norm=True,
            type_vocab_size=2,
            mlm_transform=True,
        ),
    ),
    "classifier pre-norm batchnorm gqa": (
        EncoderClassifier,
        dict(family="encoder", norm="batch", n_kv_head=1, pooling="mean"),
    ),
    "classifier post-norm batchnorm ln_embed": (
        EncoderClassifier,
        dict(family="encoder", norm="batch", norm_first=False, embed_norm=True),
    ),
    "seq2seq pre-norm rotary gqa": (
        EncoderDecoder,
        dict(family="encoder-decoder", positional="rotary", n_kv_head=2),
    ),
    "seq2seq post-norm rms ln_embed": (
        EncoderDecoder,
        dict(family="encoder-decoder", norm_first=False, norm="rms", embed_norm=True),
    ),
}


def build(cls, **options):
    """A tiny perturbed model, in training mode as built: circuit_cache must switch to eval."""
    return perturbed(cls, V, n_head=H, n_layer=L, **options)


def run(model):
    """(output, cache) of a padded batch; an encoder-decoder's target is padded too."""
    ids = torch.randint(5, V, (3, 7), generator=torch.Generator().manual_seed(1))
    if isinstance(model, EncoderDecoder):
        tgt = MASK[[1, 2, 0], :5]
        return circuit_cache(
            model, ids, MASK, decoder_input_ids=ids[:, :5], decoder_attention_mask=tgt
        )
    return circuit_cache(model, ids, MASK)


def stacks(model):
    return ["decoder", "encoder"] if isinstance(model, EncoderDecoder) else [None]


def stream(cache, stack, layer):
    """The cached stream entering block ``layer`` (L: the last block's output)."""
    p = "" if stack is None else f"{stack}."
    if layer < L:
        return cache[f"{p}blocks.{layer}.hook_resid_pre"]
    return cache[f"{p}blocks.{L - 1}.hook_resid_post"]


@pytest.fixture(params=list(CASES))
def case(request):
    cls, options = CASES[request.param]
    model = build(cls, **options)
    out, cache = run(model)
    return model, out, cache


def test_terms_sum_to_the_stream_at_every_layer(case):
    model, _, cache = case
    for stack in stacks(model):
        for layer in range(L + 1):
            terms = decompose_resid(cache, stack=stack, layer=layer)
            assert_close(terms.sum(), stream(cache, stack, layer), **TOL)
        assert_close(decompose_resid(cache, stack=stack).sum(), stream(cache, stack, L), **TOL)


def test_the_labels_follow_the_model(case):
    model, _, cache = case
    c = model.config
    for stack in stacks(model):
        labels = decompose_resid(cache, stack=stack).labels
        embeds = ["embed"]
        if c.positional in ("learned", "sinusoidal"):
            embeds.append("pos_embed")
        if c.type_vocab_size:
            embeds.append("token_type_embed")
        if c.embed_norm and c.norm != "rms":
            embeds.append("ln_embed_bias")
        assert labels[: len(embeds)] == embeds
        post, biased = not c.norm_first, c.bias
        cross = stack == "decoder" and isinstance(model, EncoderDecoder)
        want = list(embeds)
        for i in range(L):
            want += [f"L{i}H{h}" for h in range(H)] + [f"L{i}.attn_bias"] * biased
            want += [f"L{i}.ln1_bias"] * (post and c.norm != "rms")
            if cross:
                want += [f"L{i}XH{h}" for h in range(H)] + [f"L{i}.cross_bias"] * biased
                want += [f"L{i}.ln2_bias"] * (post and c.norm != "rms")
            want.append(f"L{i}.mlp")
            want += [f"L{i}.{'ln3' if cross else 'ln2'}_bias"] * (post and c.norm != "rms")
        assert labels == want


def test_pre_norm_terms_are_the_cached_tensors():
    model = build(DecoderLM, family="decoder", n_kv_head=2)
    _, cache = run(model)
    terms = decompose_resid(cache)
    assert torch.equal(terms["embed"], cache["hook_embed"])
    assert torch.equal(terms["pos_embed"], cache["hook_pos_embed"])
    assert torch.equal(terms["L1H2"], cache["blocks.1.attn.hook_result"][:, :, 2])
    assert torch.equal(terms["L0.mlp"], cache["blocks.0.hook_mlp_out"])
    bias = model.blocks[1].attn.out_proj.bias
    assert torch.equal(terms["L1.attn_bias"], bias.detach().expand(3, 7, 16))


def test_post_norm_terms_go_through_the_frozen_norms():
    """In a post-norm block, a head's term in the final stream is its hook_result carried
    through each norm after it: every term is scaled by the same 1/s, so carrying all of them
    through block 1's ln1 and ln2 gives the real stream; an unscaled term would not."""
    model = build(DecoderLM, family="decoder", norm_first=False)
    _, cache = run(model)
    final = decompose_resid(cache)
    head = cache["blocks.0.attn.hook_result"][:, :, 1]
    block = model.blocks[0]
    y1 = cache["blocks.0.hook_resid_pre"] + cache["blocks.0.hook_attn_out"]
    y2 = cache["blocks.0.hook_resid_mid"] + cache["blocks.0.hook_mlp_out"]
    carried = freeze_norm(block.ln2, y2).linear(freeze_norm(block.ln1, y1).linear(head))
    entering_1 = decompose_resid(cache, layer=1)
    assert_close(entering_1["L0H1"], carried, atol=1e-6, rtol=0.0)
    assert (entering_1["L0H1"] - head).abs().max() > 1e-2  # the norms do change it
    assert not torch.equal(final["L0H1"], entering_1["L0H1"])  # block 1's norms too


@pytest.mark.parametrize("kind", ["layer", "rms", "batch"])
def test_frozen_norm_is_exact_on_a_sum(kind):
    torch.manual_seed(3)
    norm = {"layer": LayerNorm(16), "rms": RMSNorm(16), "batch": BatchNorm(16)}[kind].eval()
    with torch.no_grad():
        for p in norm.parameters():
            p.add_(torch.randn_like(p))
        if kind == "batch":
            norm.running_mean.normal_()
            norm.running_var.uniform_(0.5, 2.0)
    parts = torch.randn(3, 2, 5, 16)  # three components of y (B 2, T 5, C 16)
    y = parts.sum(0)
    frozen = freeze_norm(norm, y)
    with torch.no_grad():
        want = norm(y)
        assert_close(frozen.linear(parts).sum(0) + frozen.constant, want, **TOL)
        assert_close(frozen(y), want, **TOL)
        if kind != "batch":  # the norm of a part is not its frozen image: the scale is y's
            assert (norm(parts[0]) - frozen(parts[0])).abs().max() > 1e-2


def test_accumulated_resid_reads_the_stream_after_each_block():
    model = build(DecoderLM, family="decoder", n_kv_head=2)
    out, cache = run(model)
    acc = accumulated_resid(cache)
    assert acc.labels == ["embed", "L0", "L1"]
    assert torch.equal(acc.values[0], cache["blocks.0.hook_resid_pre"])
    assert torch.equal(acc.values[1], cache["blocks.1.hook_resid_pre"])
    assert torch.equal(acc.values[2], cache["blocks.1.hook_resid_post"])
    assert accumulated_resid(cache, layer=1).labels == ["embed", "L0"]
    frozen = accumulated_resid(cache, norm="frozen")
    recomputed = accumulated_resid(cache, norm="recompute")
    assert_close(frozen.values[-1], out.hidden_states, **TOL)
    assert_close(recomputed.values[-1], out.hidden_states, **TOL)
    assert_close(recomputed.values[0], model.ln_final(acc.values[0]), **TOL)
    assert (frozen.values[0] - recomputed.values[0]).abs().max() > 1e-2  # other scales


def test_accumulated_resid_of_a_post_norm_stack_has_no_final_norm():
    model = build(EncoderMLM, **CASES["mlm post-norm ln_embed token types"][1])
    _, cache = run(model)
    acc = accumulated_resid(cache, norm="recompute")
    assert torch.equal(acc.values[0], cache["ln_embed.hook_normalized"])
    assert torch.equal(acc.values[-1], cache["blocks.1.hook_resid_post"])


def test_stack_head_results():
    model = build(EncoderDecoder, **CASES["seq2seq pre-norm rotary gqa"][1])
    _, cache = run(model)
    heads = stack_head_results(cache)
    assert heads.labels == [f"L{i}H{h}" for i in range(L) for h in range(H)]
    assert heads.values.shape == (L * H, 3, 5, 16)
    assert torch.equal(heads["L1H3"], cache["decoder.blocks.1.attn.hook_result"][:, :, 3])
    cross = stack_head_results(cache, kind="cross")
    assert cross.labels == [f"L{i}XH{h}" for i in range(L) for h in range(H)]
    assert torch.equal(cross["L0XH1"], cache["decoder.blocks.0.cross_attn.hook_result"][:, :, 1])
    grid = heads.heads()  # (L, H, B, T, C)
    assert torch.equal(grid[1, 2], heads["L1H2"])
    assert stack_head_results(cache, stack="encoder").values.shape == (L * H, 3, 7, 16)
    with pytest.raises(ValueError, match="no cross-attention"):
        stack_head_results(cache, stack="encoder", kind="cross")


def test_components_select_and_look_up():
    c = Components(
        ["embed", "L0H0", "L0H1", "L0.mlp"], torch.arange(4.0)[:, None] * torch.ones(4, 2)
    )
    assert c.select("L0.mlp", "embed").labels == ["L0.mlp", "embed"]
    assert torch.equal(
        c.select(lambda s: s.startswith("L0H")).values[:, 0], torch.tensor([1.0, 2.0])
    )
    assert torch.equal(c.sum(), torch.full((2,), 6.0))
    assert "L0H1" in c and len(c) == 4
    with pytest.raises(KeyError, match="did you mean L0H1"):
        c["L0H01"]
    with pytest.raises(ValueError, match="'L9H0' is not a component"):
        c.select("L9H0")
    with pytest.raises(ValueError, match="labels must differ"):
        Components(["a", "a"], torch.zeros(2))


def test_the_cache_records_its_model_and_mode():
    model = build(DecoderLM, family="decoder")
    _, cache = model.run_with_cache(torch.tensor([[5, 6, 7]]))
    assert cache.model is model and cache.training is True
    _, cache = circuit_cache(model, torch.tensor([[5, 6, 7]]))
    assert cache.model is model and cache.training is False and model.training
    assert ActivationCache().model is None


def test_a_cache_made_in_training_mode_is_refused():
    model = build(DecoderLM, family="decoder")
    _, cache = model.run_with_cache(torch.tensor([[5, 6, 7]]))
    with pytest.raises(ValueError, match="training mode"):
        decompose_resid(cache)
    with pytest.raises(ValueError, match="does not say which model"):
        decompose_resid(ActivationCache())


def test_missing_hook_points_are_named():
    model = build(DecoderLM, family="decoder").eval()
    ids = torch.tensor([[5, 6, 7]])
    _, cache = model.run_with_cache(ids, names=lambda n: not n.endswith("hook_result"))
    with pytest.raises(ValueError, match=r"lacks blocks\.0\.attn\.hook_result.*circuit_cache"):
        decompose_resid(cache)
    decompose_resid(cache, layer=0)  # the embeddings alone need no hook_result
    _, every = model.run_with_cache(ids)  # names=None: every point, enough
    assert_close(decompose_resid(every).sum(), every["blocks.1.hook_resid_post"], **TOL)


def test_bad_arguments_are_refused():
    model = build(DecoderLM, family="decoder")
    _, cache = run(model)
    with pytest.raises(ValueError, match=r"layer=3; allowed: 0\.\.2"):
        decompose_resid(cache, layer=3)
    with pytest.raises(
        ValueError, match=r"stack='encoder'; allowed for a DecoderLM: \('decoder',\)"
    ):
        decompose_resid(cache, stack="encoder")
    with pytest.raises(ValueError, match="norm='final'"):
        accumulated_resid(cache, norm="final")


# ---- converted Hugging Face models (random weights from small configs, offline) ----


@pytest.mark.parametrize(
    "name",
    ["GPT2LMHeadModel", "LlamaForCausalLM", "BertForMaskedLM", "BartForConditionalGeneration"],
)
def test_converted_huggingface_models_decompose(name):
    from glassformer.interop.huggingface import from_huggingface

    model = from_huggingface(huggingface(name, V))
    _, cache = run(model)
    for stack in stacks(model):
        terms = decompose_resid(cache, stack=stack)
        assert_close(terms.sum(), stream(cache, stack, L), **TOL)
        assert len(stack_head_results(cache, stack=stack)) == L * 4
