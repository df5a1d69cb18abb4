"""Ablation (glassformer.circuits.ablation): zeroing a head's z is taking its term z_h W^O_h
out of the layer (b^O stays), mean ablation puts in the reference's mean, resampling from the
input itself changes nothing, and in all three families, self- and cross-attention heads."""

import copy

import pytest
import torch

from glassformer.circuits import ablate, ablation_hooks
from glassformer.models import DecoderLM, EncoderDecoder, EncoderMLM
from glassformer.models.config import ModelConfig

V = 29
D = 4  # head size: d_model 16 / 4 heads
FAMILIES = {  # family: (class, options); the encoder post-norm with an embedding norm (BERT)
    "decoder": (DecoderLM, dict(family="decoder")),
    "encoder": (EncoderMLM, dict(family="encoder", norm_first=False, embed_norm=True)),
    "encoder-decoder": (EncoderDecoder, dict(family="encoder-decoder")),
}
# (family, stack, kind): every kind of head there is
HEADS = [
    ("decoder", None, "self"),
    ("encoder", None, "self"),
    ("encoder-decoder", "encoder", "self"),
    ("encoder-decoder", "decoder", "self"),
    ("encoder-decoder", "decoder", "cross"),
]


def build(family: str, **options) -> torch.nn.Module:
    cls, defaults = FAMILIES[family]
    torch.manual_seed(0)
    config = ModelConfig(
        vocab_size=V, d_model=16, n_head=4, n_layer=2, max_len=16, d_ff=24, init_std=0.3
    )
    model = cls(config.replace(**defaults, **options)).double().eval()
    with torch.no_grad():  # biases start at 0: random ones, so that b^V and b^O count
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.normal_(0.0, 0.3)
    return model


def inputs(family: str, seed: int = 1, batch: int = 2) -> dict:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, V, (batch, 6), generator=g)
    if family != "encoder-decoder":
        return dict(input_ids=ids)
    return dict(input_ids=ids, decoder_input_ids=torch.randint(3, V, (batch, 5), generator=g))


def attention(model, stack: str | None, kind: str, layer: int):
    """The MultiHeadAttention module of ``layer`` of ``stack`` (None: the model's only stack,
    a DecoderLM's or EncoderMLM's blocks being its own, or an encoder-decoder's decoder)."""
    if stack is None and isinstance(model, EncoderDecoder):
        stack = "decoder"
    body = getattr(model, stack) if stack else model
    block = body.blocks[layer]
    return block.attn if kind == "self" else block.cross_attn


# Zero ablation of a head = the head's columns of W^O zeroed ----------------------------------
@pytest.mark.parametrize(("family", "stack", "kind"), HEADS)
def test_zero_ablating_a_head_removes_its_term_z_h_w_o_h(family, stack, kind):
    model, args = build(family), inputs(family)
    ablated = ablate(model, args, heads=[(0, 2)], kind=kind, stack=stack).logits

    no_out = copy.deepcopy(model)  # W^O_h = 0: the head writes nothing (b^O stays)
    with torch.no_grad():
        attention(no_out, stack, kind, 0).out_proj.weight[:, 2 * D : 3 * D] = 0.0
    torch.testing.assert_close(ablated, no_out(**args).logits)

    no_value = copy.deepcopy(model)  # W^V_h = 0 and b^V_h = 0: z_h = A · 0 = 0
    with torch.no_grad():
        (_, _, (w_v, b_v)) = attention(no_value, stack, kind, 0).projection_weights()
        w_v[2 * D : 3 * D] = 0.0
        b_v[2 * D : 3 * D] = 0.0
    torch.testing.assert_close(ablated, no_value(**args).logits)

    only_w = copy.deepcopy(model)  # W^V_h = 0, b^V_h kept: z_h = Σ_m A_nm b^V_h = b^V_h ≠ 0
    with torch.no_grad():
        attention(only_w, stack, kind, 0).projection_weights()[2][0][2 * D : 3 * D] = 0.0
    assert not torch.allclose(ablated, only_w(**args).logits)


def test_ablating_a_head_that_writes_nothing_changes_nothing():
    model, args = build("decoder"), inputs("decoder")
    with torch.no_grad():
        model.blocks[1].attn.out_proj.weight[:, 1 * D : 2 * D] = 0.0
    expected = model(**args).logits
    for how in ("zero", "mean", "resample"):
        out = ablate(model, args, heads=[(1, 1)], how=how, reference=inputs("decoder", seed=7))
        torch.testing.assert_close(out.logits, expected)
    changed = ablate(model, args, heads=[(1, 0)]).logits  # a head that does write
    assert (changed - expected).abs().max() > 1e-3


@pytest.mark.parametrize(("family", "stack"), [("decoder", None), ("encoder-decoder", "decoder")])
def test_zero_ablating_a_feed_forward_is_zeroing_w_2_and_b_2(family, stack):
    model, args = build(family), inputs(family)
    hooks = ablation_hooks(model, mlps=[1], stack=stack)
    ablated = model.run_with_hooks(**args, hooks=hooks).logits
    block = (getattr(model, stack) if stack else model).blocks[1]
    with torch.no_grad():
        block.mlp.fc2.weight.zero_()
        block.mlp.fc2.bias.zero_()
    torch.testing.assert_close(ablated, model(**args).logits)


# Mean and resample ---------------------------------------------------------------------------
@pytest.mark.parametrize(("family", "stack", "kind"), HEADS)
def test_mean_ablation_on_the_input_itself_puts_z_h_at_its_mean_over_positions(family, stack, kind):
    """A reference of one example, the input: z_h at every position becomes its mean over the
    positions (over the real tokens when the reference gives an attention mask)."""
    model, args = build(family), inputs(family, batch=1)
    if family == "encoder":  # two padded positions at the end: the mean skips them
        args["attention_mask"] = torch.tensor([[1, 1, 1, 1, 0, 0]])
    real = args.get("decoder_attention_mask" if stack == "decoder" else "attention_mask")
    out = ablate(model, args, heads=[(1, 3)], how="mean", reference=args, kind=kind, stack=stack)

    def position_mean(z, hook):
        z = z.clone()
        w = torch.ones(z.shape[1], dtype=z.dtype) if real is None else real[0].to(z.dtype)
        z[:, :, 3] = (z[0, :, 3] * w[:, None]).sum(0) / w.sum()
        return z

    name = ("encoder." if stack == "encoder" else "decoder." if stack else "") + "blocks.1."
    name += "attn.hook_z" if kind == "self" else "cross_attn.hook_z"
    expected = model.run_with_hooks(**args, hooks=[(name, position_mean)])
    torch.testing.assert_close(out.logits, expected.logits)
    assert not torch.allclose(out.logits, model(**args).logits)


@pytest.mark.parametrize(("family", "stack", "kind"), HEADS)
def test_resampling_from_the_input_itself_changes_nothing(family, stack, kind):
    model, args = build(family), inputs(family)
    out = ablate(
        model,
        args,
        heads=[(0, 1), (1, 0), (1, 3)],
        mlps=[0, 1],
        resid=[1],
        how="resample",
        reference=args,
        kind=kind,
        stack=stack,
    )
    assert torch.equal(out.logits, model(**args).logits)


@pytest.mark.parametrize("family", FAMILIES)
def test_resampling_the_first_residual_stream_runs_the_reference(family):
    """resid_pre of layer 0 from another input at every position: the stack reads that
    input (an encoder-decoder's decoder still attends to the input's source)."""
    model, args, other = build(family), inputs(family), inputs(family, seed=5)
    out = ablate(model, args, resid=[0], how="resample", reference=other)
    expected = (
        dict(args, decoder_input_ids=other["decoder_input_ids"])
        if "decoder_input_ids" in args
        else other
    )
    torch.testing.assert_close(out.logits, model(**expected).logits)


# Positions -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "what", [dict(resid=[0]), dict(resid=[1], at="attn_out"), dict(heads=[(0, 0)]), dict(mlps=[0])]
)
def test_ablating_one_position_of_a_causal_decoder_leaves_the_earlier_ones(what):
    model, args = build("decoder"), inputs("decoder")
    before = model(**args).logits
    out = ablate(model, args, positions=[3], **what).logits
    torch.testing.assert_close(out[:, :3], before[:, :3], rtol=0, atol=1e-12)
    assert (out[:, 3] - before[:, 3]).abs().max() > 1e-3
    same = ablate(model, args, positions=-3, **what).logits  # -3 of 6 positions is 3
    assert torch.equal(same, out)


# Errors --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(heads=[(2, 0)]), r"layer 2 is out of range: the decoder stack has 2 layers"),
        (dict(heads=[(1, 4)]), r"head 4 of layer 1 is out of range: it has 4 heads"),
        (dict(mlps=[-1]), r"layer -1 is out of range"),
        (dict(heads=[(0, 0)], how="random"), r"how='random' is not known; choose one of"),
        (dict(heads=[(0, 0)], how="mean"), r"how='mean' needs reference="),
        (dict(heads=[(0, 0)], how="resample"), r"how='resample' needs reference="),
        (dict(heads=[(0, 0)], kind="cross"), r"kind='cross': the decoder stack .* no cross"),
        (
            dict(resid=[0], at="resid_mid_cross"),
            r"at='resid_mid_cross' is not known here; choose one of \['resid_pre',",
        ),
        (dict(heads=[(0, 0)], stack="encoder"), r"stack='encoder': this model's stacks are"),
        (dict(), r"nothing to ablate"),
    ],
)
def test_refuses_what_the_model_does_not_have(options, message):
    model = build("decoder")
    with pytest.raises(ValueError, match=message):
        ablation_hooks(model, **options)


def test_refuses_positions_out_of_range_and_a_reference_of_another_shape():
    model, args = build("decoder"), inputs("decoder")
    with pytest.raises(ValueError, match=r"positions \[6\] are out of range .* 6 positions"):
        ablate(model, args, heads=[(0, 0)], positions=[1, 6])
    short = dict(input_ids=args["input_ids"][:, :4])
    with pytest.raises(ValueError, match=r"reference's .*hook_z has shape \(2, 4, 4, 4\), the"):
        ablate(model, args, heads=[(0, 0)], how="resample", reference=short)
