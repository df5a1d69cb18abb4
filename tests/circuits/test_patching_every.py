"""Patching each head's q, k, v and pattern (patch_heads(activation=...)), several grids in one
call (patch_blocks, patch_heads_every: the grids patch_residual and patch_heads give, from one
clean run), and the progress bar every grid shows. Against TransformerLens:
tests/reference/test_transformer_lens_patching.py."""

import pytest
import torch

from glassformer.circuits import (
    patch_blocks,
    patch_heads,
    patch_heads_every,
    patch_path_receivers,
    patch_residual,
)

from .test_ablation import HEADS, build, inputs
from .test_patching import metric_at, value

L, H = 2, 4


def positions(family: str, stack) -> int:
    return 5 if family == "encoder-decoder" and stack != "encoder" else 6


@pytest.mark.parametrize(("family", "stack", "kind"), HEADS)
@pytest.mark.parametrize("activation", ["q", "k", "v", "pattern"])
def test_clean_equal_to_corrupted_gives_the_clean_metric_for_every_activation(
    family, stack, kind, activation
):
    model, clean = build(family), inputs(family)
    metric = metric_at(-1)
    args = (model, clean, clean, metric)
    whole = patch_heads(*args, activation=activation, kind=kind, stack=stack)
    assert whole.shape == (L, H)
    torch.testing.assert_close(whole, value(model, clean, metric).expand(L, H))
    each = patch_heads(*args, activation=activation, kind=kind, stack=stack, per_position=True)
    t = positions(family, stack)
    if kind == "cross" and activation in ("k", "v"):
        t = 6  # the source's positions
    assert each.shape == (L, H, t)


@pytest.mark.parametrize("activation", ["q", "k", "v", "pattern"])
def test_patching_a_head_after_the_metrics_position_changes_nothing(activation):
    """A causal decoder: a query, key, value or pattern row after position 2 does not reach
    the logits at 2; at or before it, some do."""
    model, clean, corrupted = build("decoder"), inputs("decoder"), inputs("decoder", seed=5)
    metric = metric_at(2)
    grid = patch_heads(model, clean, corrupted, metric, activation=activation, per_position=True)
    after = grid[..., 3:]
    torch.testing.assert_close(after, value(model, corrupted, metric).expand_as(after))
    assert (grid[..., :3] - value(model, corrupted, metric)).abs().max() > 1e-3


def test_each_attention_weight_and_the_whole_pattern():
    model, clean, corrupted = build("decoder"), inputs("decoder"), inputs("decoder", seed=5)
    metric = metric_at(-1)
    weights = patch_heads(
        model, clean, corrupted, metric, activation="pattern", per_position=True, per_source=True
    )
    assert weights.shape == (L, H, 6, 6)
    future = weights[..., torch.ones(6, 6, dtype=torch.bool).triu(1)]  # masked: 0 in both runs
    torch.testing.assert_close(future, value(model, corrupted, metric).expand_as(future))


def test_patch_blocks_stacks_patch_residual_from_one_clean_run():
    model, clean, corrupted = build("decoder"), inputs("decoder"), inputs("decoder", seed=5)
    metric = metric_at(-1)
    calls = []
    handle = model.register_forward_pre_hook(lambda module, args: calls.append(1))
    got = patch_blocks(model, clean, corrupted, metric)
    assert got.shape == (3, L, 6) and len(calls) == 2  # clean and corrupted, once each
    handle.remove()
    for i, hook in enumerate(("resid_pre", "attn_out", "mlp_out")):
        torch.testing.assert_close(
            got[i], patch_residual(model, clean, corrupted, metric, hook=hook)
        )
    whole = patch_blocks(
        model, clean, corrupted, metric, hooks=["resid_post", "resid_mid"], per_position=False
    )
    assert whole.shape == (2, L)
    torch.testing.assert_close(whole[0], value(model, clean, metric).expand(L))


@pytest.mark.parametrize(("family", "stack", "kind"), HEADS)
@pytest.mark.parametrize("per_position", [False, True])
def test_patch_heads_every_stacks_patch_heads(family, stack, kind, per_position):
    model, clean, corrupted = build(family), inputs(family), inputs(family, seed=5)
    metric = metric_at(-1)
    acts = (
        ("z", "q", "pattern")
        if kind == "cross" and per_position
        else ("z", "q", "k", "v", "pattern")
    )
    options = dict(kind=kind, stack=stack, per_position=per_position)
    got = patch_heads_every(model, clean, corrupted, metric, activations=acts, **options)
    assert got.shape == (len(acts), L, H, *((positions(family, stack),) if per_position else ()))
    for i, activation in enumerate(acts):
        want = patch_heads(model, clean, corrupted, metric, activation=activation, **options)
        torch.testing.assert_close(got[i], want)


def test_grouped_query_k_and_v_have_the_key_value_heads_and_nan_past_them():
    model, clean, corrupted = (
        build("decoder", n_kv_head=2),
        inputs("decoder"),
        inputs("decoder", seed=5),
    )
    metric = metric_at(-1)
    k = patch_heads(model, clean, corrupted, metric, activation="k")
    assert k.shape == (L, 2)
    every = patch_heads_every(model, clean, corrupted, metric)
    torch.testing.assert_close(every[2, :, :2], k)
    assert every[2:4, :, 2:].isnan().all() and not every[[0, 1, 4]].isnan().any()
    assert patch_path_receivers(model, clean, corrupted, metric, (0, 1), component="v").shape == (
        L,
        2,
    )


# Progress --------------------------------------------------------------------------------------
def test_progress_bar_counts_the_runs_on_stderr_and_is_off_when_asked(capsys):
    model, clean, corrupted = build("decoder"), inputs("decoder"), inputs("decoder", seed=5)
    metric = metric_at(-1)
    patch_residual(model, clean, corrupted, metric, progress=True)
    err = capsys.readouterr().err
    assert "patching resid_pre" in err and "12/12" in err
    patch_path_receivers(model, clean, corrupted, metric, (0, 1), progress=True)
    assert "path patching: sender → each head's q" in capsys.readouterr().err
    patch_heads_every(model, clean, corrupted, metric, progress=False)
    import ipykernel  # noqa: F401 (loaded as a notebook runner loads it: still no notebook)

    patch_blocks(model, clean, corrupted, metric)  # None: stderr is not a terminal here
    assert capsys.readouterr().err == ""
    with pytest.raises(TypeError, match=r"progress must be True, False or None .*got 'bar'"):
        patch_heads(model, clean, corrupted, metric, progress="bar")


# Errors ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(activation="result"), r"activation='result' is not known; choose one of"),
        (dict(activation="q", per_source=True), r"per_source=True .* needs activation='pattern'"),
        (dict(activation="pattern", per_source=True), r"and per_position=True; got"),
    ],
)
def test_patch_heads_refuses_what_it_cannot_patch(options, message):
    model, clean = build("decoder"), inputs("decoder")
    with pytest.raises(ValueError, match=message):
        patch_heads(model, clean, clean, metric_at(-1), **options)


def test_every_refuses_bad_lists():
    model, clean = build("decoder"), inputs("decoder")
    args = (model, clean, clean, metric_at(-1))
    with pytest.raises(
        ValueError, match=r"hooks must be a non-empty list of names; got 'resid_pre'"
    ):
        patch_blocks(*args, hooks="resid_pre")
    with pytest.raises(ValueError, match=r"hooks names a point twice"):
        patch_blocks(*args, hooks=["mlp_out", "mlp_out"])
    with pytest.raises(ValueError, match=r"hooks='z' is not known"):
        patch_blocks(*args, hooks=["z"])
    with pytest.raises(ValueError, match=r"activation='out' is not known"):
        patch_heads_every(*args, activations=["z", "out"])
    pair = build("encoder-decoder")
    with pytest.raises(ValueError, match=r"kind='cross' with per_position=True: .* source's"):
        patch_heads_every(
            pair, inputs("encoder-decoder"), inputs("encoder-decoder"), metric_at(-1),
            kind="cross", per_position=True,
        )  # fmt: skip
