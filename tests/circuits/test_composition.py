"""Q-, K- and V-composition scores (circuits/composition.py) against the materialised formula
‖S_1 M_2‖_F / (‖S_1‖_F ‖M_2‖_F) in float64, and on heads built to compose exactly 0 (orthogonal
subspaces) or exactly 1 (rank one, aligned)."""

import pytest
import torch
from torch.testing import assert_close

from glassformer.circuits import (
    FactoredMatrix,
    composition_score,
    composition_scores,
    ov_matrix,
    qk_matrix,
)
from glassformer.models import DecoderLM, EncoderDecoder
from glassformer.models.config import ModelConfig

E, H, D = 16, 4, 4
TOL = dict(atol=1e-10, rtol=1e-10)


def build(cls=DecoderLM, n_layer=3, **options):
    torch.manual_seed(0)
    config = ModelConfig(vocab_size=11, d_model=E, n_head=H, n_layer=n_layer, max_len=8, d_ff=8)
    model = cls(config.replace(**options)).double().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.4)
    return model


def reference(model, kind, stack=None):
    """The (L, H, L, H) scores from E×E matrices, one pair at a time."""
    n_layer = len((model if stack is None else getattr(model, stack)).blocks)  # a DecoderLM's own
    s = [ov_matrix(model, layer, stack=stack).full() for layer in range(n_layer)]
    y = [qk_matrix(model, layer, stack=stack).full() for layer in range(n_layer)]
    reads = {"q": y, "k": [m.mT for m in y], "v": s}[kind]
    out = torch.zeros(n_layer, H, n_layer, H, dtype=torch.float64)
    fro = torch.linalg.matrix_norm
    for l1 in range(n_layer):
        for l2 in range(l1 + 1, n_layer):
            for h1 in range(H):
                for h2 in range(H):
                    a, b = s[l1][h1], reads[l2][h2]
                    out[l1, h1, l2, h2] = fro(a @ b) / (fro(a) * fro(b))
    return out


@pytest.mark.parametrize("kind", ["q", "k", "v"])
def test_scores_equal_the_materialised_formula(kind):
    model = build(n_kv_head=2)
    got = composition_scores(model, kind)
    assert got.shape == (3, H, 3, H)
    assert_close(got, reference(model, kind), **TOL)
    assert (got[1:, :, 1, :] == 0).all() and (got[:, :, 0] == 0).all()  # not earlier: 0
    assert (got[0, :, 1:] > 0).all()


def test_encoder_stack_and_pairwise_score():
    model = build(EncoderDecoder, n_layer=2, family="encoder-decoder")
    assert_close(composition_scores(model, "v", stack="encoder"), reference(model, "v", "encoder"))
    s, y = ov_matrix(model, 0), qk_matrix(model, 1, kind="cross")  # a cross head's queries
    fro = torch.linalg.matrix_norm
    want = fro(s.full() @ y.full()) / (fro(s.full()) * fro(y.full()))
    assert_close(composition_score(s, y), want, **TOL)  # (H,)
    pairs = composition_score(s.unsqueeze(1), y.unsqueeze(0))  # broadcast: (H, H)
    s, y = s.full(), y.full()
    want = [[fro(s[i] @ y[j]) / (fro(s[i]) * fro(y[j])) for j in range(H)] for i in range(H)]
    assert_close(pairs, torch.tensor(want, dtype=torch.float64), **TOL)


def set_head(attn, head, **weights):
    """Write one head's weights, given in the row convention (W_Q, W_K, W_V: (E, D);
    W_O: (D, E)), into torch's layout (q_proj, k_proj, v_proj rows, out_proj columns)."""
    proj = {"W_Q": attn.q_proj, "W_K": attn.k_proj, "W_V": attn.v_proj}
    with torch.no_grad():
        for name, w in weights.items():
            if name == "W_O":
                attn.out_proj.weight[:, head * D : (head + 1) * D] = w.T
            else:
                proj[name].weight[head * D : (head + 1) * D] = w.T


def test_orthogonal_subspaces_compose_zero_and_aligned_rank_one_heads_compose_one():
    """Head 0 of layer 0 writes only into the first 8 coordinates; head 1 of layer 1 reads its
    queries, keys and values from the last 8: every composition 0. Head 2 of layer 0 is
    a bᵀ (rank one, writing b); head 3 of layer 1 has W_Q = b e_1ᵀ, W_K = c e_1ᵀ,
    W_V = b e_1ᵀ: S_1 Y_2 = a bᵀ b cᵀ / √D, whose norm is the product of theirs: 1."""
    model = build(n_layer=2)
    g = torch.Generator().manual_seed(3)
    rand = lambda *shape: torch.randn(*shape, generator=g, dtype=torch.float64)  # noqa: E731
    first, last = torch.zeros(D, E, dtype=torch.float64), torch.zeros(E, D, dtype=torch.float64)
    first[:, :8], last[8:] = rand(D, 8), rand(8, D)
    set_head(model.blocks[0].attn, 0, W_O=first)
    set_head(model.blocks[1].attn, 1, W_Q=last, W_K=last.flip(1), W_V=last)

    a, b, c = rand(E, 1), rand(E, 1), rand(E, 1)
    e1 = torch.zeros(1, D, dtype=torch.float64)
    e1[0, 0] = 1.0
    set_head(model.blocks[0].attn, 2, W_V=a @ e1, W_O=e1.T @ b.T)
    set_head(model.blocks[1].attn, 3, W_Q=b @ e1, W_K=c @ e1, W_V=b @ e1)
    for kind in ("q", "k", "v"):
        scores = composition_scores(model, kind)
        assert scores[0, 0, 1, 1] < 1e-12  # orthogonal: exactly 0 up to rounding
        assert scores[0, 0, 1, 0] > 0.01  # a random head still reads it
    assert_close(composition_scores(model, "q")[0, 2, 1, 3], torch.tensor(1.0, dtype=torch.float64))
    assert_close(composition_scores(model, "v")[0, 2, 1, 3], torch.tensor(1.0, dtype=torch.float64))
    k = composition_scores(model, "k")[0, 2, 1, 3]  # reads c, not b: |b·c| / (|b| |c|)
    assert_close(k, (b.T @ c).abs().squeeze() / (b.norm() * c.norm()))


def test_bad_kind_is_refused():
    with pytest.raises(ValueError, match=r"kind must be one of \('q', 'k', 'v'\)"):
        composition_scores(build(n_layer=2), "o")


def test_zero_matrix_scores_nan():
    zero = FactoredMatrix(torch.zeros(E, D), torch.zeros(D, E))
    assert composition_score(zero, zero).isnan()
