"""Patching grids that resume the cached corrupted run (circuits/_resume.py) equal the plain
re-run of the whole model with the cell's hook, on every grid kind and family: a causal
decoder (from the cell's layer and position, earlier keys and values reused), padded and
rotary grouped-query decoders, a float32 one, an encoder (from the layer, every position) and
an encoder-decoder (run whole); with a metric that names the positions it reads
(``logit_difference``) and one that reads the whole output. Also subsets and per-prompt
values."""

import pytest
import torch

from glassformer.circuits import (
    logit_difference,
    patch_blocks,
    patch_heads,
    patch_heads_every,
    patch_path_receivers,
    patch_path_senders,
    patch_residual,
)
from glassformer.models.hooked import ActivationCache

from .test_ablation import build, inputs

STREAM = ("resid_pre", "attn_out", "resid_mid", "mlp_out", "resid_post")
MODELS = {  # name -> (family, options of the config)
    "decoder": ("decoder", {}),
    "rotary-gqa": ("decoder", dict(positional="rotary", n_kv_head=2, norm="rms")),
    "window": ("decoder", dict(attention_graph="window:3")),
    "encoder": ("encoder", {}),
    "encoder-decoder": ("encoder-decoder", {}),
}


def setup(name: str, padded: str = "", dtype=torch.float64):
    family, options = MODELS[name]
    model = build(family, **options).to(dtype)
    clean, corrupted = inputs(family), inputs(family, seed=5)
    if padded:  # the second prompt has two pad tokens on that side
        mask = torch.ones_like(clean["input_ids"])
        if padded == "left":
            mask[1, :2] = 0
        else:
            mask[1, -2:] = 0
        clean["attention_mask"] = corrupted["attention_mask"] = mask
    return model, clean, corrupted


def at_last(out):
    """The whole output read by hand: a metric without ``read_positions``."""
    return out.logits[:, -1, 3] - out.logits[:, -1, 5]


def plain(model, clean, corrupted, metric, name, index):
    """The metric of the whole corrupted run with ``name``'s ``index`` from the clean run
    (``clean``: the input, or the cache of its run)."""
    with torch.no_grad():
        cache = clean if isinstance(clean, ActivationCache) else cached(model, clean)

        def put(x, hook):
            x = x.clone()
            x[index] = cache[name][index]
            return x

        return torch.as_tensor(metric(model.run_with_hooks(**corrupted, hooks=[(name, put)])))


def cached(model, clean) -> ActivationCache:
    """Every point of the clean run."""
    with torch.no_grad():
        return model.run_with_cache(**clean)[1]


def metrics(model):
    return {
        "logit_difference": logit_difference(model, 3, 5, reduce="none"),
        "by hand": at_last,
    }


@pytest.mark.parametrize(
    ("name", "metric"),
    [(name, "logit_difference") for name in MODELS] + [("decoder", "by hand")],
)
def test_residual_grids_equal_the_plain_rerun(name, metric):
    model, clean, corrupted = setup(name)
    metric, kept = metrics(model)[metric], cached(model, clean)
    got = patch_blocks(model, clean, corrupted, metric, hooks=STREAM)  # (B, 5, L, T)
    n_layer, t = got.shape[2:]
    for i, hook in enumerate(STREAM):
        for layer in range(n_layer):
            point = (
                f"decoder.blocks.{layer}.hook_{hook}"
                if name == "encoder-decoder"
                else (f"blocks.{layer}.hook_{hook}")
            )
            want = torch.stack(
                [plain(model, kept, corrupted, metric, point, (slice(None), p)) for p in range(t)]
            )  # (T, B)
            torch.testing.assert_close(got[:, i, layer], want.T, rtol=0, atol=1e-10)


@pytest.mark.parametrize("padded", ["left", "right"])
@pytest.mark.parametrize("name", ["decoder", "rotary-gqa", "encoder"])
def test_padded_batches_equal_the_plain_rerun(name, padded):
    model, clean, corrupted = setup(name, padded)
    metric = logit_difference(model, 3, 5, position=[-1, 3], per_prompt=False, reduce="none")
    got = patch_residual(model, clean, corrupted, metric)  # (B, L, T)
    kept = cached(model, clean)
    for layer in range(got.shape[1]):
        point = f"blocks.{layer}.hook_resid_pre"
        for p in range(got.shape[2]):
            want = plain(model, kept, corrupted, metric, point, (slice(None), p))
            torch.testing.assert_close(got[:, layer, p], want, rtol=0, atol=1e-10)


ACTIVATIONS = ["z", "q", "k", "v", "pattern"]


@pytest.mark.parametrize("name", ["decoder", "rotary-gqa", "window", "encoder"])
@pytest.mark.parametrize("per_position", [False, True])
def test_head_grids_equal_the_plain_rerun(name, per_position):
    model, clean, corrupted = setup(name)
    metric, kept = metrics(model)["by hand"], cached(model, clean)
    heads, positions = [0, 1], [0, 3, 5]  # a subset: the grid's rows are these
    subset = dict(heads=heads, positions=positions) if per_position else dict(heads=heads)
    for activation in ACTIVATIONS:
        options = dict(activation=activation, per_position=per_position, **subset)
        got = patch_heads(model, clean, corrupted, metric, **options)  # (B, L, 2[, 3])
        for layer in range(got.shape[1]):
            point = f"blocks.{layer}.attn.hook_{activation}"
            for i, h in enumerate(heads):
                for j, p in enumerate(positions) if per_position else [(None, None)]:
                    if activation == "pattern":
                        index = (slice(None), h) if p is None else (slice(None), h, p)
                    else:
                        index = (slice(None), slice(None), h) if p is None else (slice(None), p, h)
                    want = plain(model, kept, corrupted, metric, point, index)
                    cell = got[:, layer, i] if p is None else got[:, layer, i, j]
                    torch.testing.assert_close(cell, want, rtol=0, atol=1e-10)


def test_each_attention_weight_equals_the_plain_rerun():
    model, clean, corrupted = setup("decoder")
    metric = logit_difference(model, 3, 5)
    got = patch_heads(
        model, clean, corrupted, metric, activation="pattern", per_position=True,
        per_source=True, layers=1, heads=[2],
    )  # fmt: skip
    assert got.shape == (1, 1, 6, 6)
    for t in range(6):
        for s in range(6):
            index = (slice(None), 2, t, s)
            want = plain(model, clean, corrupted, metric, "blocks.1.attn.hook_pattern", index)
            torch.testing.assert_close(got[0, 0, t, s], want, rtol=0, atol=1e-10)


def test_float32_equals_the_plain_rerun_to_1e_5():
    model, clean, corrupted = setup("rotary-gqa", "left", dtype=torch.float32)
    metric = logit_difference(model, 3, 5)
    got = patch_residual(model, clean, corrupted, metric)
    for layer in range(got.shape[0]):
        for p in range(got.shape[1]):
            index = (slice(None), p)
            want = plain(model, clean, corrupted, metric, f"blocks.{layer}.hook_resid_pre", index)
            torch.testing.assert_close(got[layer, p], want, rtol=0, atol=1e-5)


# Subsets --------------------------------------------------------------------------------------
def test_subsets_are_the_slices_of_the_full_grid_in_the_order_asked():
    model, clean, corrupted = setup("decoder")
    metric = logit_difference(model, 3, 5)
    full = patch_residual(model, clean, corrupted, metric)  # (L, T)
    some = patch_residual(model, clean, corrupted, metric, layers=[1, 0], positions=range(2, 5))
    torch.testing.assert_close(some, full[[1, 0]][:, 2:5])
    one = patch_residual(model, clean, corrupted, metric, layers=1, positions=[5])
    assert one.shape == (1, 1) and one[0, 0] == full[1, 5]
    heads = patch_heads(model, clean, corrupted, metric, per_position=True)  # (L, H, T)
    torch.testing.assert_close(
        patch_heads(model, clean, corrupted, metric, per_position=True, heads=[3, 1], positions=0),
        heads[:, [3, 1]][:, :, [0]],
    )
    every = patch_heads_every(model, clean, corrupted, metric)  # (5, L, H)
    torch.testing.assert_close(
        patch_heads_every(model, clean, corrupted, metric, layers=[1], heads=range(2)),
        every[:, [1]][:, :, :2],
    )
    blocks = patch_blocks(model, clean, corrupted, metric)  # (3, L, T)
    torch.testing.assert_close(
        patch_blocks(model, clean, corrupted, metric, layers=0, positions=[4, 5]),
        blocks[:, [0]][..., 4:],
    )


def test_path_grid_subsets_and_per_prompt_values():
    model, clean, corrupted = setup("rotary-gqa")
    mean, each = logit_difference(model, 3, 5), logit_difference(model, 3, 5, reduce="none")
    senders = patch_path_senders(model, clean, corrupted, mean)  # (L, H)
    torch.testing.assert_close(
        patch_path_senders(model, clean, corrupted, mean, layers=[1], heads=[0, 3]),
        senders[[1]][:, [0, 3]],
    )
    per_prompt = patch_path_senders(model, clean, corrupted, each)  # (B, L, H)
    assert per_prompt.shape == (2, *senders.shape)
    torch.testing.assert_close(per_prompt.mean(0), senders)
    receivers = patch_path_receivers(model, clean, corrupted, mean, (0, 1), component="k")
    assert receivers.shape == (2, 2) and receivers[0].isnan().all()  # H_kv = 2
    torch.testing.assert_close(
        patch_path_receivers(model, clean, corrupted, each, (0, 1), component="k", layers=1).mean(
            0
        ),
        receivers[[1]],
    )


def test_per_prompt_grids_put_the_prompts_first_and_average_to_the_mean_grid():
    model, clean, corrupted = setup("decoder")
    mean, each = logit_difference(model, 3, 5), logit_difference(model, 3, 5, reduce="none")
    for grid in (patch_residual, patch_heads, patch_blocks):
        per_prompt, whole = grid(model, clean, corrupted, each), grid(model, clean, corrupted, mean)
        assert per_prompt.shape == (2, *whole.shape)
        torch.testing.assert_close(per_prompt.mean(0), whole)
    normalized = patch_residual(  # (B, L): the last layer's output, all positions: the clean run
        model, clean, corrupted, each, hook="resid_post", per_position=False, normalize=True
    )
    torch.testing.assert_close(normalized[:, -1], torch.ones(2, dtype=normalized.dtype))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(layers=2), r"layers=2: \[2\] out of range; there are 2 layers \(0 to 1\)"),
        (dict(layers=[-1]), r"layers=\[-1\]: \[-1\] out of range"),
        (dict(positions=[0, 6]), r"positions=\[0, 6\]: \[6\] out of range; there are 6"),
        (dict(layers=[0, 0]), r"give each of the layers once"),
        (dict(layers="0"), r"layers='0': give an int, a range or a list of ints"),
        (dict(positions=1, per_position=False), r"positions=1 .* needs per_position=True"),
    ],
)
def test_subsets_out_of_range_are_refused_by_name(options, message):
    model, clean, corrupted = setup("decoder")
    with pytest.raises(ValueError, match=message):
        patch_residual(model, clean, corrupted, logit_difference(model, 3, 5), **options)


def test_heads_out_of_range_count_the_key_value_heads_for_k():
    model, clean, corrupted = setup("rotary-gqa")
    with pytest.raises(ValueError, match=r"heads=\[2\]: \[2\] out of range; there are 2 k heads"):
        patch_heads(model, clean, corrupted, at_last, activation="k", heads=[2])


def test_an_encoder_classifier_and_an_input_with_labels_equal_the_plain_rerun():
    """A classifier resumes from the layer through its own head; an input with labels runs
    whole (the metric may read the loss)."""
    from glassformer.models import EncoderClassifier
    from glassformer.models.config import ModelConfig

    torch.manual_seed(0)
    config = ModelConfig(family="encoder", vocab_size=40, d_model=16, n_head=4, n_layer=2,
                         max_len=16, d_ff=24, norm_first=False)  # fmt: skip
    cases = [(EncoderClassifier(config).double().eval(), lambda out: out.logits[:, 1], {})]
    decoder, labels = build("decoder"), {"labels": inputs("decoder", seed=7)["input_ids"]}
    cases.append((decoder, lambda out: out.loss, labels))
    for model, metric, extra in cases:
        clean = {**inputs("decoder"), **extra}
        corrupted = {**inputs("decoder", seed=5), **extra}
        got = patch_residual(model, clean, corrupted, metric, hook="attn_out")  # (L, T), (B, L, T)
        for layer in range(2):
            for p in range(6):
                point, index = f"blocks.{layer}.hook_attn_out", (slice(None), p)
                want = plain(model, clean, corrupted, metric, point, index)
                torch.testing.assert_close(got[..., layer, p], want, rtol=0, atol=1e-10)


def test_a_patch_that_changes_nothing_gives_the_corrupted_value_exactly():
    """Before the one position where the two prompts differ the clean and corrupted streams
    are equal: those cells are the corrupted run itself, bit for bit (normalized: 0)."""
    model = build("decoder")
    clean = inputs("decoder")
    corrupted = {"input_ids": clean["input_ids"].clone()}
    corrupted["input_ids"][:, 4] = 3 + (clean["input_ids"][:, 4] - 2) % 26  # another token
    metric = logit_difference(model, 3, 5)
    grid = patch_residual(model, clean, corrupted, metric, normalize=True)  # (L, T)
    assert (grid[:, :4] == 0).all()
    torch.testing.assert_close(grid[0, 4], torch.tensor(1.0, dtype=grid.dtype))
