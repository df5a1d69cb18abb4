"""OV and QK matrices, their spectra and the composition scores against TransformerLens, on a
small random GPT-2 saved to a local folder and loaded by both libraries (no download):
TransformerLens 4's TransformerBridge with its raw weights (``no_processing=True``)."""

import pytest
import torch
from torch.testing import assert_close

transformers = pytest.importorskip("transformers")
bridge_module = pytest.importorskip("transformer_lens.model_bridge")

from glassformer.circuits import (  # noqa: E402
    composition_scores,
    copying_score,
    ov_matrix,
    qk_matrix,
)
from glassformer.interop.huggingface import from_huggingface  # noqa: E402

TOL = dict(atol=1e-4, rtol=1e-4)
D = 4


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=3, n_embd=16, n_head=4, vocab_size=23, n_positions=16)
    hf = transformers.GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        for p in hf.parameters():
            p.normal_(0.0, 0.3)
    folder = tmp_path_factory.mktemp("gpt2")
    hf.save_pretrained(folder)
    model = from_huggingface(hf).eval()  # first: the bridge wraps hf's modules in place
    tl = bridge_module.TransformerBridge.boot_transformers(str(folder), hf_model=hf)
    tl.enable_compatibility_mode(no_processing=True)
    return model, tl


def test_ov_and_qk_equal_transformer_lens(pair):
    model, tl = pair
    for layer in range(3):
        ov, qk = ov_matrix(model, layer), qk_matrix(model, layer)
        assert_close(ov.full(), tl.OV[layer].AB, **TOL)
        assert_close(qk.full() * D**0.5, tl.QK[layer].AB, **TOL)  # TL's QK has no 1/√d_k
        assert_close(ov.singular_values, tl.OV[layer].S[..., :D], **TOL)
        assert_close(ov.norm(), tl.OV[layer].norm(), **TOL)
        lam = tl.OV[layer].eigenvalues  # of TL's B A, D×D
        assert_close(copying_score(ov), (lam.sum(-1) / lam.abs().sum(-1)).real, **TOL)


@pytest.mark.parametrize("kind", ["q", "k", "v"])
def test_composition_scores_equal_transformer_lens(pair, kind):
    model, tl = pair
    want = tl.all_composition_scores(kind.upper()).scores  # (L, H, L, H), 0 where not earlier
    got = composition_scores(model, kind)
    assert_close(got, want, **TOL)
    assert (got[0, :, 1:] > 0).all()
