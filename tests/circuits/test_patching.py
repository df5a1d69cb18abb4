"""Activation patching (glassformer.circuits.patching): patching a whole layer of the stream
restores the clean metric, patching after the metric's position in a causal stack does
nothing, clean = corrupted gives the clean metric everywhere; in all three families, self- and
cross-attention heads; the clean run made once."""

import pytest
import torch

from glassformer.circuits import normalized, patch_heads, patch_residual

from .test_ablation import HEADS, attention, build, inputs

D = 4


def metric_at(position: int):
    """The logit difference of tokens 3 and 5 at ``position`` of the first example."""
    return lambda out: out.logits[0, position, 3] - out.logits[0, position, 5]


def value(model, args, metric) -> torch.Tensor:
    with torch.no_grad():
        return metric(model(**args))


# The whole stream of a layer: the clean run --------------------------------------------------
@pytest.mark.parametrize("family", ["decoder", "encoder"])
@pytest.mark.parametrize("hook", ["resid_pre", "resid_post"])
def test_patching_a_whole_layer_of_the_stream_gives_the_clean_metric(family, hook):
    model, clean, corrupted = build(family), inputs(family), inputs(family, seed=5)
    metric = metric_at(-1)
    got = patch_residual(model, clean, corrupted, metric, hook=hook, per_position=False)
    assert got.shape == (2,)
    torch.testing.assert_close(got, value(model, clean, metric).expand(2))
    ones = patch_residual(
        model, clean, corrupted, metric, hook=hook, per_position=False, normalize=True
    )
    torch.testing.assert_close(ones, torch.ones(2, dtype=ones.dtype))


def test_encoder_decoder_patching_its_last_decoder_layer_or_any_encoder_layer():
    """The decoder's last resid_post, or its stream after the last cross-attention, decides
    the logits; the decoder reads the encoder through cross-attention, so when only the
    source differs, any whole encoder layer restores the clean run."""
    model, clean, corrupted = (
        build("encoder-decoder"),
        inputs("encoder-decoder"),
        inputs("encoder-decoder", seed=5),
    )
    metric = metric_at(-1)
    for hook in ("resid_post", "resid_mid_cross"):
        last = patch_residual(model, clean, corrupted, metric, hook=hook, per_position=False)
        torch.testing.assert_close(last[-1], value(model, clean, metric))
        assert (last[0] - value(model, clean, metric)).abs() > 1e-3  # the later layer counts
    source_only = dict(clean, input_ids=corrupted["input_ids"])
    for hook in ("resid_pre", "resid_mid", "resid_post"):
        got = patch_residual(
            model, clean, source_only, metric, hook=hook, stack="encoder", per_position=False
        )
        torch.testing.assert_close(got, value(model, clean, metric).expand(2))


# Causality -----------------------------------------------------------------------------------
@pytest.mark.parametrize("family", ["decoder", "encoder-decoder"])
@pytest.mark.parametrize("hook", ["resid_pre", "attn_out", "mlp_out", "resid_post"])
def test_patching_after_the_metrics_position_in_a_causal_stack_changes_nothing(family, hook):
    model, clean, corrupted = build(family), inputs(family), inputs(family, seed=5)
    if family == "encoder-decoder":  # the same source: only the decoder's stream differs
        corrupted["input_ids"] = clean["input_ids"]
    p, metric = 2, metric_at(2)
    grid = patch_residual(model, clean, corrupted, metric, hook=hook)
    t = corrupted.get("decoder_input_ids", corrupted["input_ids"]).shape[1]
    assert grid.shape == (2, t)
    after = grid[:, p + 1 :]
    torch.testing.assert_close(after, value(model, corrupted, metric).expand_as(after))
    assert (grid[:, : p + 1] - value(model, corrupted, metric)).abs().max() > 1e-3
    if hook == "resid_post":  # the last stream at the metric's position alone decides it
        torch.testing.assert_close(grid[-1, p], value(model, clean, metric))


# Heads ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("family", "stack", "kind"), HEADS)
@pytest.mark.parametrize("per_position", [False, True])
def test_clean_equal_to_corrupted_gives_the_clean_metric_everywhere(
    family, stack, kind, per_position
):
    model, clean = build(family), inputs(family)
    metric = metric_at(-1)
    heads = patch_heads(
        model, clean, clean, metric, kind=kind, stack=stack, per_position=per_position
    )
    t = clean["input_ids"].shape[1] if stack != "decoder" else clean["decoder_input_ids"].shape[1]
    assert heads.shape == ((2, 4, t) if per_position else (2, 4))
    torch.testing.assert_close(heads, value(model, clean, metric).expand_as(heads))
    grid = patch_residual(model, clean, clean, metric, hook="mlp_out", stack=stack)
    torch.testing.assert_close(grid, value(model, clean, metric).expand(2, t))


@pytest.mark.parametrize(("family", "stack", "kind"), HEADS)
def test_patching_a_head_that_writes_nothing_leaves_the_corrupted_metric(family, stack, kind):
    model, clean, corrupted = build(family), inputs(family), inputs(family, seed=5)
    with torch.no_grad():
        attention(model, stack, kind, 0).out_proj.weight[:, 1 * D : 2 * D] = 0.0
    metric = metric_at(-1)
    heads = patch_heads(model, clean, corrupted, metric, kind=kind, stack=stack)
    base = value(model, corrupted, metric)
    torch.testing.assert_close(heads[0, 1], base)
    others = torch.cat([heads[0, :1], heads[0, 2:], heads[1]])
    assert (others - base).abs().min() > 1e-6  # every head that writes moves it


def test_per_position_head_patching_respects_causality():
    model, clean, corrupted = build("decoder"), inputs("decoder"), inputs("decoder", seed=5)
    grid = patch_heads(model, clean, corrupted, metric_at(2), per_position=True)
    after = grid[..., 3:]
    torch.testing.assert_close(after, value(model, corrupted, metric_at(2)).expand_as(after))


# The run -------------------------------------------------------------------------------------
def test_both_runs_are_made_once_and_each_cell_runs_from_its_layer():
    model, clean, corrupted = build("decoder"), inputs("decoder"), inputs("decoder", seed=5)
    calls, first, last = [], [], []
    model.register_forward_pre_hook(lambda module, args: calls.append(1))
    model.blocks[0].register_forward_pre_hook(lambda module, args: first.append(1))
    model.blocks[1].register_forward_pre_hook(lambda module, args: last.append(1))
    patch_residual(model, clean, corrupted, metric_at(-1))
    assert len(calls) == 2  # the clean and the corrupted run, once each
    assert (len(first), len(last)) == (2 + 6, 2 + 2 * 6)  # layer 0's cells run block 0 too
    calls.clear()
    patch_heads(model, clean, corrupted, metric_at(-1), normalize=True)
    assert len(calls) == 2  # the corrupted run is the normalization's baseline too


def test_patching_runs_in_eval_mode_without_gradients_and_restores_the_mode():
    model = build("decoder", dropout=0.5)
    clean, corrupted = inputs("decoder"), inputs("decoder", seed=5)
    expected = patch_residual(model, clean, corrupted, metric_at(-1))
    model.train()
    got = patch_residual(model, clean, corrupted, metric_at(-1))
    assert model.training and not got.requires_grad
    assert torch.equal(got, expected)


def test_normalized_is_zero_at_the_corrupted_value_and_one_at_the_clean_one():
    model, clean, corrupted = build("decoder"), inputs("decoder"), inputs("decoder", seed=5)
    metric = metric_at(-1)
    c, k = value(model, clean, metric), value(model, corrupted, metric)
    scaled = normalized(metric, c, k)
    with torch.no_grad():
        torch.testing.assert_close(scaled(model(**clean)), torch.tensor(1.0, dtype=c.dtype))
        torch.testing.assert_close(scaled(model(**corrupted)), torch.tensor(0.0, dtype=c.dtype))
    raw = patch_residual(model, clean, corrupted, metric)
    torch.testing.assert_close(
        patch_residual(model, clean, corrupted, metric, normalize=True), (raw - k) / (c - k)
    )
    with pytest.raises(ValueError, match=r"clean and corrupted values are both"):
        patch_heads(model, clean, clean, metric, normalize=True)


# Errors --------------------------------------------------------------------------------------
def test_refuses_inputs_of_other_shapes_naming_both():
    model, clean = build("decoder"), inputs("decoder")
    corrupted = dict(input_ids=clean["input_ids"][:, :5])
    match = (
        r"same shapes; got clean \{'input_ids': \(2, 6\)\} and corrupted \{'input_ids': \(2, 5\)\}"
    )
    with pytest.raises(ValueError, match=match):
        patch_residual(model, clean, corrupted, metric_at(-1))
    with pytest.raises(ValueError, match=r"same shapes; got clean \(2, 6\) and corrupted \(1, 6\)"):
        patch_heads(model, clean["input_ids"], clean["input_ids"][:1], metric_at(-1))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m, a: patch_residual(m, a, a, metric_at(-1), hook="z"), r"hook='z' is not known"),
        (lambda m, a: patch_heads(m, a, a, metric_at(-1), kind="cross"), r"kind='cross'"),
        (
            lambda m, a: patch_heads(m, a, a, lambda out: out.logits[0, -1]),
            r"metric must return one number",
        ),
        (lambda m, a: patch_residual(m, a, a, metric_at(-1), stack="encoder"), r"stack='encoder'"),
    ],
)
def test_refuses_what_the_model_does_not_have(call, message):
    model = build("decoder")
    with pytest.raises(ValueError, match=message):
        call(model, inputs("decoder"))
