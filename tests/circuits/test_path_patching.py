"""Path patching (glassformer.circuits.path_patching): into the final stream it is the senders'
clean-minus-corrupted write added to the corrupted run's last stream, read by the final norm
and the unembedding (written out here by hand); from the last MLP it equals patching that
MLP's output; clean = corrupted changes nothing; the order of sender and receiver, the model
and the names are checked. TransformerLens's direct path patching into q, k, v:
tests/reference/test_transformer_lens_patching.py."""

import pytest
import torch

from glassformer.circuits import (
    patch_path,
    patch_path_receivers,
    patch_path_senders,
    patch_residual,
)

from .test_ablation import D, build, inputs
from .test_patching import metric_at, value

L, H = 2, 4


def by_hand(model, clean, corrupted, metric, senders):
    """The metric of unembed(norm_final(x_L + Δ)), x_L the corrupted run's last stream and Δ
    the senders' clean-minus-corrupted writes: z_h W^O_h for a head, the output for an MLP."""
    with torch.no_grad():
        _, good = model.run_with_cache(**clean)
        out, bad = model.run_with_cache(**corrupted)
        delta = 0
        for layer, head in senders:
            if head == "mlp":
                name = f"blocks.{layer}.hook_mlp_out"
                delta = delta + good[name] - bad[name]
            else:
                z = f"blocks.{layer}.attn.hook_z"
                w_o = model.blocks[layer].attn.out_proj.weight[:, head * D : (head + 1) * D]
                delta = delta + (good[z][:, :, head] - bad[z][:, :, head]) @ w_o.T
        final = bad[f"blocks.{L - 1}.hook_resid_post"] + delta
        out.logits = model.unembed(model.ln_final(final))
        return metric(out)


def test_each_head_and_mlp_into_the_final_stream_equals_the_hand_written_direct_path():
    model, clean, corrupted = build("decoder"), inputs("decoder"), inputs("decoder", seed=5)
    metric = metric_at(-1)
    heads = patch_path_senders(model, clean, corrupted, metric)
    mlps = patch_path_senders(model, clean, corrupted, metric, senders="mlp")
    assert heads.shape == (L, H) and mlps.shape == (L,)
    for layer in range(L):
        torch.testing.assert_close(
            mlps[layer], by_hand(model, clean, corrupted, metric, [(layer, "mlp")])
        )
        for head in range(H):
            want = by_hand(model, clean, corrupted, metric, [(layer, head)])
            torch.testing.assert_close(heads[layer, head], want)
    assert (heads - value(model, corrupted, metric)).abs().min() > 1e-6  # every head counts
    several = [(0, 1), (0, 3), (1, "mlp")]  # writes summed
    torch.testing.assert_close(
        patch_path(model, clean, corrupted, metric, several),
        by_hand(model, clean, corrupted, metric, several),
    )


def test_the_last_mlp_into_the_final_stream_is_patching_its_output():
    """Nothing reads the last MLP's write but the final norm: its one path is the whole
    effect, the same as activation patching of that layer's mlp_out."""
    model, clean, corrupted = build("decoder"), inputs("decoder"), inputs("decoder", seed=5)
    metric = metric_at(-1)
    patched = patch_residual(model, clean, corrupted, metric, hook="mlp_out", per_position=False)
    got = patch_path(model, clean, corrupted, metric, (L - 1, "mlp"), "resid_final")
    torch.testing.assert_close(got, patched[-1])


def test_a_path_into_a_later_head_moves_the_metric_and_clean_equal_to_corrupted_does_not():
    model, clean, corrupted = build("decoder"), inputs("decoder"), inputs("decoder", seed=5)
    metric = metric_at(-1)
    for component in ("q", "k", "v"):
        grid = patch_path_receivers(model, clean, corrupted, metric, (0, 2), component=component)
        assert grid.shape == (L, H) and grid[0].isnan().all()
        assert (grid[1] - value(model, corrupted, metric)).abs().min() > 1e-6
        same = patch_path_receivers(model, clean, clean, metric, (0, 2), component=component)
        torch.testing.assert_close(same[1], value(model, clean, metric).expand(H))
    one = patch_path(model, clean, corrupted, metric, (0, 2), (1, 3, "k"))
    torch.testing.assert_close(one, grid.new_tensor(0) + patch_path_receivers(
        model, clean, corrupted, metric, (0, 2), component="k")[1, 3])  # fmt: skip
    into_mlp_sender = patch_path_senders(
        model, clean, corrupted, metric, (1, 0, "q"), senders="mlp"
    )
    assert into_mlp_sender[1].isnan() and not into_mlp_sender[0].isnan()


def test_normalize_rescales_to_the_corrupted_and_clean_runs():
    model, clean, corrupted = build("decoder"), inputs("decoder"), inputs("decoder", seed=5)
    metric = metric_at(-1)
    c, k = value(model, clean, metric), value(model, corrupted, metric)
    raw = patch_path_senders(model, clean, corrupted, metric)
    got = patch_path_senders(model, clean, corrupted, metric, normalize=True)
    torch.testing.assert_close(got, (raw - k) / (c - k))


def test_runs_in_eval_mode_and_restores_the_mode():
    model = build("decoder", dropout=0.5)
    clean, corrupted = inputs("decoder"), inputs("decoder", seed=5)
    expected = patch_path_senders(model, clean, corrupted, metric_at(-1), progress=False)
    model.train()
    got = patch_path_senders(model, clean, corrupted, metric_at(-1), progress=False)
    assert model.training and not got.requires_grad
    assert torch.equal(got, expected)


@pytest.mark.parametrize(
    ("sender", "receiver", "message"),
    [
        ((1, 0), (1, 2, "q"), r"no path from \[\(1, 0\)\] to \[\(1, 2, 'q'\)\]: a head of layer l"),
        ((1, "mlp"), (0, 2, "v"), r"every sender must be in an earlier layer"),
        ((0, 4), "resid_final", r"head 4 of layer 0 is out of range: it has 4 heads"),
        ((0, True), "resid_final", r"head True of layer 0 is out of range: it has 4 heads"),
        ((0, 1), (1, False, "q"), r"receiver \(1, False, 'q'\): head False is out of range"),
        ((2, "mlp"), "resid_final", r"layer 2 is out of range: the decoder stack has 2 layers"),
        ((0, 1), (1, 0, "z"), r"receiver \(1, 0, 'z'\) is not known: give 'resid_final' or"),
        ((0, 1), "logits", r"receiver 'logits' is not known"),
        (
            "L0H1",
            "resid_final",
            r"sender='L0H1' is not known: give \(layer, head\), \(layer, 'mlp'\)",
        ),
        ([(0,)], "resid_final", r"sender=\[\(0,\)\] is not known"),
        ((0, 1), (1, 4, "k"), r"head 4 is out of range; layer 1 has 4 key/value heads \(0 to 3\)"),
        ([], "resid_final", r"sender=\[\] is not known"),
        ((0, 1), [], r"receiver: give 'resid_final' or at least one"),
    ],
)
def test_refuses_a_path_that_does_not_exist(sender, receiver, message):
    model, clean = build("decoder"), inputs("decoder")
    with pytest.raises(ValueError, match=message):
        patch_path(model, clean, clean, metric_at(-1), sender, receiver)


def test_refuses_post_norm_and_two_stack_models_and_unknown_names():
    encoder, decoder = build("encoder"), build("decoder")
    with pytest.raises(ValueError, match=r"pre-norm blocks \(norm_first=True\).*post-norm"):
        patch_path_senders(encoder, inputs("encoder"), inputs("encoder"), metric_at(-1))
    pair = build("encoder-decoder")
    with pytest.raises(ValueError, match=r"one stack .* EncoderDecoder has an encoder and a"):
        patch_path_senders(
            pair, inputs("encoder-decoder"), inputs("encoder-decoder"), metric_at(-1)
        )
    args = (decoder, inputs("decoder"), inputs("decoder"), metric_at(-1))
    with pytest.raises(ValueError, match=r"senders='attn' is not known; choose 'heads' or 'mlp'"):
        patch_path_senders(*args, senders="attn")
    with pytest.raises(ValueError, match=r"component='z' is not known; choose one of"):
        patch_path_receivers(*args, (0, 1), component="z")
    with pytest.raises(ValueError, match=r"same shapes"):
        patch_path(decoder, inputs("decoder"), inputs("decoder", batch=1), metric_at(-1), (0, 1))
