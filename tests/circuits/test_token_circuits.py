"""The full OV and QK circuits W_E S W_U, W_E Y W_Eᵀ and the copying score
(circuits/token_circuits.py) against the materialised products, in float64; a head built to
copy scores 1, one built to suppress -1."""

import pytest
import torch
from torch.testing import assert_close

from glassformer.circuits import (
    FactoredMatrix,
    copying_score,
    full_ov_circuit,
    full_qk_circuit,
    ov_matrix,
    qk_matrix,
)
from glassformer.models import DecoderLM, EncoderClassifier, EncoderDecoder, EncoderMLM
from glassformer.models.config import ModelConfig

V, E, D = 23, 16, 4
TOL = dict(atol=1e-10, rtol=1e-10)


def build(cls, **options):
    torch.manual_seed(0)
    config = ModelConfig(vocab_size=V, d_model=E, n_head=4, n_layer=2, max_len=16, d_ff=24)
    model = cls(config.replace(**options)).double().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.4)
    return model


MODELS = {
    "decoder tied": lambda: build(DecoderLM, family="decoder"),
    "decoder untied scaled": lambda: build(
        DecoderLM, family="decoder", tie_embeddings=False, embed_scale=True, n_kv_head=2
    ),
    "mlm": lambda: build(EncoderMLM, family="encoder", norm_first=False, embed_norm=True),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_full_circuits_equal_the_materialised_products(name):
    model = MODELS[name]()
    w_e = model.embed.weight * model.embed.multiplier  # (V, E)
    w_u = model.unembed.proj.weight.T  # (E, V)
    ids = [5, 0, 22, 7]
    for layer in (0, 1):
        s, y = ov_matrix(model, layer).full(), qk_matrix(model, layer).full()  # (H, E, E)
        ov, qk = full_ov_circuit(model, layer), full_qk_circuit(model, layer)
        assert isinstance(ov, FactoredMatrix) and ov.shape == (4, V, V) and ov.inner_dim == D
        assert_close(ov.full(), w_e @ s @ w_u, **TOL)
        assert_close(qk.full(), w_e @ y @ w_e.T, **TOL)
        one = full_ov_circuit(model, layer, 2, tokens=ids)
        assert_close(one.full(), (w_e @ s[2] @ w_u)[ids][:, ids], **TOL)
        one = full_qk_circuit(model, layer, 2, tokens=torch.tensor(ids))
        assert_close(one.full(), (w_e @ y[2] @ w_e.T)[ids][:, ids], **TOL)
        want = torch.linalg.eigvals(w_e @ s @ w_u)
        assert_close(copying_score(ov), (want.sum(-1) / want.abs().sum(-1)).real, **TOL)
    every = full_ov_circuit(model, None, tokens=ids)  # (L, H, 4, 4)
    assert every.shape == (2, 4, 4, 4)
    assert_close(every[1].full(), full_ov_circuit(model, 1, tokens=ids).full(), **TOL)


def test_encoder_decoder_cross_circuits_read_source_and_target_vocabularies():
    """Separate vocabularies (source 23, target 19): cross-attention's values and keys are
    source tokens, its queries and outputs target tokens."""
    model = build(
        EncoderDecoder, family="encoder-decoder", share_embeddings=False, tgt_vocab_size=19
    )
    src, tgt = model.encoder.embed.weight, model.decoder.embed.weight  # (23, E), (19, E)
    w_u = model.unembed.proj.weight.T  # (E, 19)
    s = ov_matrix(model, 1, kind="cross").full()
    y = qk_matrix(model, 1, kind="cross").full()
    assert_close(full_ov_circuit(model, 1, kind="cross").full(), src @ s @ w_u, **TOL)
    assert_close(full_qk_circuit(model, 1, kind="cross").full(), tgt @ y @ src.T, **TOL)
    s = ov_matrix(model, 1).full()  # the decoder's self-attention: target tokens throughout
    assert_close(full_ov_circuit(model, 1).full(), tgt @ s @ w_u, **TOL)
    y = qk_matrix(model, 0, stack="encoder").full()
    assert_close(full_qk_circuit(model, 0, stack="encoder").full(), src @ y @ src.T, **TOL)
    with pytest.raises(ValueError, match="does not end in an LM head"):
        full_ov_circuit(model, 0, stack="encoder")
    with pytest.raises(ValueError, match=r"ids in 0\.\.18"):
        full_ov_circuit(model, 1, tokens=[3, 20])  # 20 is a source id, not a target one


def planted(sign: float) -> DecoderLM:
    """Head 0 of layer 0 with W_V = P, W_O = sign · Pᵀ (P: E×D, orthonormal columns) and tied
    embeddings: W_E S W_Eᵀ = sign · (W_E P)(W_E P)ᵀ, whose eigenvalues all have that sign."""
    model = build(DecoderLM, family="decoder")
    attn = model.blocks[0].attn
    p, _ = torch.linalg.qr(torch.randn(E, D, dtype=torch.float64))
    with torch.no_grad():
        attn.v_proj.weight[:D] = p.T  # W_V of head 0 (torch layout: Pᵀ)
        attn.out_proj.weight[:, :D] = sign * p  # W_O of head 0 (torch layout: (Pᵀ)ᵀ)
    return model


def test_copying_score_of_a_planted_copying_and_suppressing_head():
    for sign in (1.0, -1.0):
        model = planted(sign)
        assert_close(copying_score(full_ov_circuit(model, 0, 0)), torch.tensor(sign, **_f64()))
        assert_close(copying_score(ov_matrix(model, 0, 0)), torch.tensor(sign, **_f64()))
        scores = copying_score(full_ov_circuit(model, 0))  # (H,): the other heads are random
        assert scores.shape == (4,) and (scores[1:].abs() < 0.9).all()


def _f64():
    return dict(dtype=torch.float64)


def test_copying_score_of_tensors_and_zero():
    m = torch.diag(torch.tensor([3.0, -1.0, 0.0], **_f64()))
    assert_close(copying_score(m), torch.tensor(2.0 / 4.0, **_f64()))
    rotation = torch.tensor([[0.0, -1.0], [1.0, 0.0]], **_f64())  # eigenvalues ±i
    assert_close(copying_score(rotation), torch.tensor(0.0, **_f64()))
    assert copying_score(torch.zeros(3, 3)).isnan()
    with pytest.raises(ValueError, match="square"):
        copying_score(torch.zeros(3, 4))


def test_full_ov_circuit_needs_an_lm_head():
    model = build(EncoderClassifier, family="encoder")
    with pytest.raises(ValueError, match="does not end in an LM head"):
        full_ov_circuit(model, 0)
    assert full_qk_circuit(model, 0).shape == (4, V, V)  # the QK circuit needs no unembedding
    with pytest.raises(ValueError, match="1-D sequence of token ids"):
        full_qk_circuit(model, 0, tokens=[[1, 2]])
