"""The logit lens with targets and full logits, each norm option of accumulated_resid, and
the OV and QK matrices with the norm's gain folded in, against TransformerLens 4 on the random
GPT-2 of test_transformer_lens (loaded offline by both; raw weights unless said otherwise)."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from glassformer.circuits import (
    accumulated_resid,
    full_ov_circuit,
    full_qk_circuit,
    logit_lens,
    ov_matrix,
    qk_matrix,
)

from . import test_transformer_lens as ref

L, T, V = ref.L, ref.T, ref.V
folder, models, runs = ref.folder, ref.models, ref.runs  # its fixtures
pytestmark = pytest.mark.usefixtures("offline")  # tests/reference/conftest.py

TOL = dict(atol=1e-4, rtol=0.0)
A, B = 7, 42


@pytest.mark.parametrize("return_type", ["logits", "log_probs", "probs"])
def test_full_readings_equal_transformer_lens_logit_lens(runs, return_type):
    """Every layer, every position, the whole vocabulary."""
    _, _, cache, _, tl_cache = runs
    theirs = tl_cache.logit_lens(positions=None, return_type=return_type).values
    mine = logit_lens(cache, return_type=return_type)
    assert mine.values.shape == theirs.shape == (L + 1, 3, T, V)
    assert_close(mine.values, theirs, **TOL)


def test_targets_equal_transformer_lens_logit_lens(runs):
    """One target and a pair (a logit difference), at the last position and at every one."""
    _, out, cache, _, tl_cache = runs
    theirs = tl_cache.logit_lens(targets=[A, B], return_type="logits").values  # (L+1, B, 2)
    one = logit_lens(cache, targets=A, position=-1)
    assert one.return_type == "logits" and one.values.shape == (L + 1, 3)
    assert_close(one.values, theirs[..., 0], **TOL)
    diff = logit_lens(cache, targets=(A, B), position=-1)
    assert_close(diff.values, theirs[..., 0] - theirs[..., 1], **TOL)
    assert_close(diff.values[-1], out.logits[:, -1, A] - out.logits[:, -1, B], **TOL)
    every = tl_cache.logit_lens(targets=[A, B], positions=None, return_type="log_probs").values
    mine = logit_lens(cache, targets=(A, B), return_type="log_probs")
    assert_close(mine.values, every[..., 0] - every[..., 1], **TOL)
    rows = torch.tensor([A, B, 3])  # one target per batch row
    per_row = logit_lens(cache, targets=rows, position=-1, per_prompt=True).values
    for i, token in enumerate(rows.tolist()):
        want = tl_cache.logit_lens(targets=[token], return_type="logits").values[:, i, 0]
        assert_close(per_row[:, i], want, **TOL)


def test_a_list_of_targets_is_never_read_differently_from_transformer_lens(runs):
    """TransformerLens reads targets=[A, B, 3] as three tokens shared by every prompt; the same
    call here is refused rather than read as one token per prompt."""
    _, _, cache, _, tl_cache = runs
    shared = tl_cache.logit_lens(targets=[A, B, 3], return_type="logits").values
    assert shared.shape == (L + 1, 3, 3)  # (layers, prompts, targets): shared targets
    with pytest.raises(ValueError, match=r"targets=\[.*\] gives several tokens; write per_prompt"):
        logit_lens(cache, targets=[A, B, 3], position=-1)
    for j, token in enumerate([A, B, 3]):  # one call per shared target
        assert_close(logit_lens(cache, targets=token, position=-1).values, shared[..., j], **TOL)


def test_each_norm_option_against_transformer_lens(models, runs):
    """norm="recompute" is TransformerLens's accumulated_resid(apply_ln=True) (it recomputes
    the final norm on each layer's stream) and its logit lens; norm="frozen" is its
    apply_ln_to_stack with the cached final scale, times the gain plus the bias, and differs
    from apply_ln=True by whole logits in the early layers."""
    model, _ = models
    _, _, cache, _, tl_cache = runs
    norm = model.ln_final
    recomputed = tl_cache.accumulated_resid(layer=None, apply_ln=True)
    assert_close(accumulated_resid(cache, norm="recompute").values, recomputed, **TOL)
    scaled = tl_cache.apply_ln_to_stack(tl_cache.accumulated_resid(layer=None), layer=None)
    frozen = accumulated_resid(cache, norm="frozen").values
    assert_close(frozen, scaled * norm.weight + norm.bias, **TOL)
    w_u = model.unembed.proj.weight.T
    gap = ((frozen - recomputed) @ w_u).abs().amax()
    assert gap > 0.5  # frozen is not TransformerLens's apply_ln=True
    lens = logit_lens(cache, norm="frozen", return_type="logits").values
    assert (lens - tl_cache.logit_lens(positions=None).values).abs().amax() > 0.5


@pytest.fixture(scope="module")
def folded(folder):
    """TransformerLens with ln1's gain folded into W_Q, W_K, W_V and nothing else changed
    (writing weights and the unembedding not centred, value biases kept)."""
    return ref._bridge(
        folder,
        fold_ln=True,
        center_writing_weights=False,
        center_unembed=False,
        fold_value_biases=False,
    )


def test_ov_and_qk_with_fold_ln_equal_transformer_lens_folded(models, folded):
    """Without fold_ln, glassformer's S and Y equal TransformerLens's model.OV / model.QK of
    the unprocessed model (test_transformer_lens), not of a folded one; with fold_ln=True
    they equal the folded model's, all layers at once and head by head."""
    model, _ = models
    d = ref.D
    assert_close(ov_matrix(model, None, fold_ln=True).full(), folded.OV.AB, **TOL)
    assert_close(qk_matrix(model, None, fold_ln=True).full() * d**0.5, folded.QK.AB, **TOL)
    assert (ov_matrix(model, None).full() - folded.OV.AB).abs().amax() > 0.1
    for layer in range(L):
        assert_close(ov_matrix(model, layer, 1, fold_ln=True).full(), folded.OV[layer, 1].AB, **TOL)
        assert_close(
            qk_matrix(model, layer, fold_ln=True).full() * d**0.5, folded.QK[layer].AB, **TOL
        )
    assert_close(ov_matrix(model, None, 2, fold_ln=True).full(), folded.OV[:, 2].AB, **TOL)


@pytest.fixture(scope="module")
def processed(folder):
    """TransformerLens with its default processing (fold_ln, center_writing_weights,
    center_unembed, fold_value_biases)."""
    return ref._bridge(folder)


def test_full_circuits_with_fold_ln_equal_transformer_lens_processed(models, processed):
    """full_ov_circuit(fold_ln=True, center_unembed=True) and full_qk_circuit(fold_ln=True)
    are TransformerLens's W_E @ model.OV @ W_U and W_E @ model.QK @ W_Eᵀ of its default
    processed model (its centring of W_E and W_O changes neither product once the reading
    weights are centred)."""
    model, _ = models
    tokens = torch.tensor([3, 7, 11, 42, 99])
    tl = processed
    w_e, w_u = tl.W_E[tokens], tl.W_U[:, tokens]
    got = full_ov_circuit(model, None, None, tokens, fold_ln=True, center_unembed=True)
    assert_close(got.full(), (w_e @ tl.OV @ w_u).AB, **TOL)
    got = full_qk_circuit(model, None, None, tokens, fold_ln=True)
    assert_close(got.full() * ref.D**0.5, (w_e @ tl.QK @ w_e.T).AB, **TOL)
