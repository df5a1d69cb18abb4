"""glassformer against TransformerLens 4 on the same random GPT-2, loaded offline by both.

The model (2 layers, d_model 32, 4 heads, vocabulary 100, every weight perturbed so no norm
gain is 1 and no bias 0) is saved to a local folder with ``save_pretrained``; glassformer
converts it (``from_huggingface_dir``), TransformerLens wraps a second copy
(``TransformerBridge.boot_transformers(folder, hf_model=...)``). With
``enable_compatibility_mode(no_processing=True)`` the bridge keeps the raw weights (no LayerNorm
folding, no centering), so its activations are the model's own and the numbers compare
directly. Offline: HF_HUB_OFFLINE is set and a socket connection fails the test.

Conventions that differ (tested as such, not hidden):

* TransformerLens's ``hook_normalized`` is (x − μ)/s before the gain and bias, glassformer's is
  the norm's output γ ⊙ (x − μ)/s + β.
"""

from __future__ import annotations

import pytest
import torch
import transformers
from torch.testing import assert_close
from transformer_lens.model_bridge import TransformerBridge

from glassformer.circuits import (
    accumulated_resid,
    composition_score,
    composition_scores,
    copying_score,
    decompose_resid,
    full_ov_circuit,
    full_qk_circuit,
    logit_attribution,
    ov_matrix,
    qk_matrix,
)
from glassformer.interop.huggingface import from_huggingface_dir

TOL = dict(atol=1e-4, rtol=0.0)
L, H, C, V, T = 2, 4, 32, 100, 9
D = C // H


def _gpt2(folder):
    """A random GPT-2 saved to ``folder``: every parameter perturbed (gains, biases too)."""
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=L, n_embd=C, n_head=H, vocab_size=V, n_positions=32)
    hf = transformers.GPT2LMHeadModel(config)
    with torch.no_grad():
        for p in hf.parameters():
            p.add_(0.3 * torch.randn_like(p))
    hf.save_pretrained(folder)


def _bridge(folder, **compatibility):
    """TransformerLens's bridge around its own copy of the saved model (it wraps the modules
    of the model it is given in place)."""
    hf = transformers.GPT2LMHeadModel.from_pretrained(folder, local_files_only=True)
    bridge = TransformerBridge.boot_transformers(str(folder), hf_model=hf.eval(), device="cpu")
    bridge.enable_compatibility_mode(**compatibility)
    return bridge


pytestmark = pytest.mark.usefixtures("offline")  # tests/reference/conftest.py


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    transformers.logging.set_verbosity_error()
    folder = tmp_path_factory.mktemp("gpt2")
    _gpt2(folder)
    return folder


@pytest.fixture(scope="module")
def models(folder):
    """(glassformer model, TransformerLens bridge with the raw weights)."""
    return from_huggingface_dir(folder), _bridge(folder, no_processing=True)


@pytest.fixture(scope="module")
def runs(models):
    """(ids, glassformer output, glassformer cache, TransformerLens logits, its cache)."""
    model, tl = models
    ids = torch.randint(0, V, (3, T), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        out, cache = model.run_with_cache(ids)
        tl_logits, tl_cache = tl.run_with_cache(ids)
    return ids, out, cache, tl_logits, tl_cache


def test_bridge_keeps_the_raw_weights(models):
    model, tl = models
    assert_close(tl.ln_final.w, model.ln_final.weight, atol=0.0, rtol=0.0)
    assert_close(tl.W_U, model.unembed.proj.weight.T, atol=0.0, rtol=0.0)
    assert tl.ln_final.w.std() > 0.05  # perturbed: a folded or reset gain would show


def test_logits_equal(runs):
    _, out, _, tl_logits, _ = runs
    assert_close(out.logits, tl_logits, **TOL)


# hook points both libraries have, with the same name and the same meaning
SHARED = [
    "hook_embed",
    "hook_pos_embed",
    *[
        f"blocks.{layer}.{point}"
        for layer in range(L)
        for point in [
            "hook_resid_pre",
            "attn.hook_q",
            "attn.hook_k",
            "attn.hook_v",
            "attn.hook_pattern",
            "attn.hook_z",
            "hook_attn_out",
            "hook_resid_mid",
            "mlp.hook_pre",
            "mlp.hook_post",
            "hook_mlp_out",
            "hook_resid_post",
        ]
    ],
]


@pytest.mark.parametrize("name", SHARED)
def test_cached_activation_equals_transformer_lens(runs, name):
    _, _, cache, _, tl_cache = runs
    assert_close(cache[name], tl_cache[name], **TOL)


def test_residual_stream_per_layer_equals_transformer_lens(runs):
    """resid_pre, resid_mid, resid_post of every layer, by TransformerLens's short names; the
    last resid_post is what the final norm reads."""
    _, _, cache, _, tl_cache = runs
    for layer in range(L):
        for short in ("resid_pre", "resid_mid", "resid_post"):
            assert_close(cache[short, layer], tl_cache[short, layer], **TOL)
    assert_close(cache["resid_post", L - 1], tl_cache["ln_final.hook_in"], **TOL)


def test_attention_scores_equal_where_a_key_may_be_attended(runs):
    _, _, cache, _, tl_cache = runs
    allowed = torch.ones(T, T, dtype=torch.bool).tril()
    for layer in range(L):
        mine = cache[f"blocks.{layer}.attn.hook_attn_scores"]
        theirs = tl_cache[f"blocks.{layer}.attn.hook_attn_scores"]
        assert_close(mine[..., allowed], theirs[..., allowed], **TOL)


def test_norm_output_is_transformer_lens_normalized_times_gain_plus_bias(models, runs):
    """TransformerLens's hook_normalized is (x − μ)/s; glassformer's the norm's output."""
    model, _ = models
    _, _, cache, _, tl_cache = runs
    blocks = model.blocks
    norms = {f"blocks.{i}.ln1": blocks[i].ln1 for i in range(L)}
    norms |= {f"blocks.{i}.ln2": blocks[i].ln2 for i in range(L)}
    norms["ln_final"] = model.ln_final
    for name, norm in norms.items():
        want = tl_cache[f"{name}.hook_normalized"] * norm.weight + norm.bias
        assert_close(cache[f"{name}.hook_normalized"], want, **TOL)


def test_head_results_equal_transformer_lens_stack_head_results(runs):
    """Each head's term z_h W^O_h (glassformer's hook_result, (B, T, H, C)) against
    TransformerLens's stack_head_results: (L·H, B, T, C), labels L{l}H{h}, from z and W_O."""
    _, _, cache, _, tl_cache = runs
    stack, labels = tl_cache.stack_head_results(return_labels=True)
    assert labels == [f"L{layer}H{head}" for layer in range(L) for head in range(H)]
    mine = torch.cat([cache["result", layer].permute(2, 0, 1, 3) for layer in range(L)])
    assert_close(mine, stack, **TOL)
    first, _ = tl_cache.stack_head_results(layer=1, return_labels=True)
    assert_close(cache["result", 0].permute(2, 0, 1, 3), first, **TOL)
    for layer in range(L):  # TransformerLens's attn_out = Σ heads + b_O, glassformer's too
        bias = tl_cache["attn_out", layer] - tl_cache["result", layer].sum(2)
        assert_close(cache["attn_out", layer] - cache["result", layer].sum(2), bias, **TOL)


def test_ov_and_qk_matrices_equal_transformer_lens(models):
    """S = W_V W_O and Y = W_Q W_Kᵀ / √d_k per head, E×E materialised and their singular
    values, all layers at once ((L, H, E, E), TransformerLens's model.OV / model.QK layout) and
    head by head. TransformerLens's QK has no 1/√d_k."""
    model, tl = models
    ov, qk = ov_matrix(model, None), qk_matrix(model, None)
    assert ov.shape == qk.shape == (L, H, C, C)
    assert_close(ov.full(), tl.OV.AB, **TOL)
    assert_close(qk.full() * D**0.5, tl.QK.AB, **TOL)
    assert_close(ov.singular_values, tl.OV.S[..., :D], **TOL)
    assert_close(qk.singular_values * D**0.5, tl.QK.S[..., :D], **TOL)
    assert_close(ov.norm(), tl.OV.norm(), **TOL)
    lam = tl.OV.eigenvalues  # of TransformerLens's D×D product B A
    assert_close(copying_score(ov), (lam.sum(-1) / lam.abs().sum(-1)).real, **TOL)
    for layer in range(L):
        for head in range(H):
            assert_close(ov_matrix(model, layer, head).full(), tl.OV[layer, head].AB, **TOL)
            assert_close(
                qk_matrix(model, layer, head).full() * D**0.5, tl.QK[layer, head].AB, **TOL
            )


def test_full_circuits_on_a_token_set_equal_transformer_lens(models):
    """W_E S W_U and W_E Y W_Eᵀ restricted to a few tokens, against TransformerLens's
    W_E[tokens] @ model.OV @ W_U[:, tokens] and W_E[tokens] @ model.QK @ W_E[tokens]ᵀ."""
    model, tl = models
    tokens = torch.tensor([3, 7, 11, 42, 99])
    w_e, w_u = tl.W_E[tokens], tl.W_U[:, tokens]
    assert_close(full_ov_circuit(model, None, None, tokens).full(), (w_e @ tl.OV @ w_u).AB, **TOL)
    want = (w_e @ tl.QK @ w_e.T).AB
    assert_close(full_qk_circuit(model, None, None, tokens).full() * D**0.5, want, **TOL)


@pytest.mark.parametrize("kind", ["q", "k", "v"])
def test_composition_scores_equal_transformer_lens(models, kind):
    """TransformerLens's all_composition_scores (L, H, L, H), 0 where layer l1 is not before
    l2, and each pair by composition_score(S_1, Y_2 | Y_2ᵀ | S_2)."""
    model, tl = models
    want = tl.all_composition_scores(kind.upper()).scores
    assert_close(composition_scores(model, kind), want, **TOL)
    reader = {"q": qk_matrix, "k": lambda *at: qk_matrix(*at).T, "v": ov_matrix}[kind]
    for h1 in range(H):
        for h2 in range(H):
            got = composition_score(ov_matrix(model, 0, h1), reader(model, 1, h2))
            assert_close(got, want[0, h1, 1, h2], **TOL)


def test_right_padded_batch_equals_transformer_lens_at_real_positions(models):
    """With an attention mask (two rows right-padded): logits, the stream of every layer
    and each head's result agree at the real positions (what a padded position holds is
    not meaningful, and the two libraries differ there)."""
    model, tl = models
    ids = torch.randint(0, V, (3, T), generator=torch.Generator().manual_seed(5))
    mask = torch.ones(3, T, dtype=torch.long)
    mask[1, 7:], mask[2, 4:] = 0, 0
    real = mask.bool()
    with torch.no_grad():
        out, cache = model.run_with_cache(ids, mask)
        tl_logits, tl_cache = tl.run_with_cache(ids, attention_mask=mask)
    tl_cache.compute_head_results()  # from hook_z and W_O
    assert_close(out.logits[real], tl_logits[real], **TOL)
    for layer in range(L):
        for short in ("resid_pre", "resid_mid", "resid_post", "result"):
            assert_close(cache[short, layer][real], tl_cache[short, layer][real], **TOL)


def test_decompose_resid_equals_transformer_lens(runs):
    """The stream entering each layer (and the final one) as terms: TransformerLens's
    decompose_resid has one term per attention layer, glassformer's one per head plus the
    output bias, which sum to it; embed, pos_embed and each MLP are the same terms."""
    _, _, cache, _, tl_cache = runs
    for layer in [*range(L), None]:
        mine = decompose_resid(cache, layer=layer)
        theirs, labels = tl_cache.decompose_resid(layer=layer, return_labels=True)
        for label, term in zip(labels, theirs, strict=True):
            if label.endswith("_attn_out"):
                at = int(label.split("_")[0])
                heads = mine.select(*[f"L{at}H{h}" for h in range(H)], f"L{at}.attn_bias")
                assert_close(heads.sum(), term, **TOL)
            else:
                assert_close(
                    mine[
                        {"embed": "embed", "pos_embed": "pos_embed"}.get(
                            label, f"L{label.split('_')[0]}.mlp"
                        )
                    ],
                    term,
                    **TOL,
                )
        assert_close(mine.sum(), theirs.sum(0), **TOL)


def test_full_decomposition_per_head_equals_transformer_lens(runs):
    """get_full_resid_decomposition (per head, per MLP, embeddings, the summed biases)."""
    _, _, cache, _, tl_cache = runs
    mine = decompose_resid(cache)
    theirs, labels = tl_cache.get_full_resid_decomposition(expand_neurons=False, return_labels=True)
    for label, term in zip(labels, theirs, strict=True):
        if label == "bias":  # Σ_l b_O of layer l: glassformer's L{l}.attn_bias terms
            want = mine.select(lambda s: s.endswith(".attn_bias")).sum()
        elif label.endswith("_mlp_out"):
            want = mine[f"L{label.split('_')[0]}.mlp"]
        else:  # embed, pos_embed, L{l}H{h}
            want = mine[label]
        assert_close(want, term.expand_as(want), **TOL)


def test_accumulated_resid_equals_transformer_lens(models, runs):
    """The stream after each block, as it is and through the final norm: TransformerLens's
    apply_ln=True at the final layer recomputes the norm on each stream (the logit lens,
    glassformer's norm="recompute"); its apply_ln_to_stack with the cached scale is
    (x − μ)/s, which times the gain plus the bias is glassformer's norm="frozen"."""
    model, _ = models
    _, _, cache, _, tl_cache = runs
    norm = model.ln_final
    theirs = tl_cache.accumulated_resid(layer=None)
    assert_close(accumulated_resid(cache).values, theirs, **TOL)
    recomputed = tl_cache.accumulated_resid(layer=None, apply_ln=True)
    assert_close(accumulated_resid(cache, norm="recompute").values, recomputed, **TOL)
    scaled = tl_cache.apply_ln_to_stack(theirs, layer=None)
    frozen = accumulated_resid(cache, norm="frozen").values
    assert_close(frozen, scaled * norm.weight + norm.bias, **TOL)


@pytest.fixture(scope="module")
def processed(folder):
    """TransformerLens's usual coordinates for direct logit attribution: the final norm's gain
    folded into W_U, writing weights and W_U centred (value biases kept in the heads, as
    glassformer keeps them)."""
    return _bridge(folder, fold_value_biases=False)


def test_logit_attrs_equal_transformer_lens(runs, processed):
    """Each head's, MLP's and embedding's direct share of a logit difference at the last
    position: glassformer's logit_attribution (final norm frozen, gain and unembedding as
    they are) against TransformerLens's logit_attrs on its full decomposition (gain folded
    into W_U; centring leaves differences unchanged). The summed output biases are one term
    there, and TransformerLens leaves out its folded b_U, which glassformer counts among the
    constants; with them both add up to the model's logit difference."""
    ids, out, cache, _, _ = runs
    a, b = 7, 42
    mine = logit_attribution(cache, (a, b), position=-1)
    with torch.no_grad():
        _, tl_cache = processed.run_with_cache(ids)
    stack, labels = tl_cache.get_full_resid_decomposition(
        expand_neurons=False, pos_slice=-1, return_labels=True
    )
    theirs = tl_cache.logit_attrs(stack, tokens=a, incorrect_tokens=b, pos_slice=-1)
    assert theirs.shape == (len(labels), 3)
    for label, share in zip(labels, theirs, strict=True):
        if label == "bias":
            want = mine.terms.select(lambda s: s.endswith(".attn_bias")).sum()
        elif label.endswith("_mlp_out"):
            want = mine[f"L{label.split('_')[0]}.mlp"]
        else:
            want = mine[label]
        assert_close(want, share, **TOL)
    logit_difference = out.logits[:, -1, a] - out.logits[:, -1, b]
    assert_close(mine.total(), logit_difference, **TOL)
    b_u = processed.b_U[a] - processed.b_U[b]
    assert_close(theirs.sum(0) + b_u, logit_difference, **TOL)
