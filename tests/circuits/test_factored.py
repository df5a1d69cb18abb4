"""FactoredMatrix (circuits/factored.py): every operation equals the same operation on the
materialised product A @ B, in float64, with batch dimensions and rank-deficient factors."""

import pytest
import torch
from torch.testing import assert_close

from glassformer.circuits import FactoredMatrix

F64 = dict(dtype=torch.float64)


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), **F64)


def deficient(batch=(2, 3), m=7, r=4, n=6, true_rank=2, seed=0):
    """A (…, m, r) B (…, r, n) whose product has rank ``true_rank`` < r: A's last r - true_rank
    columns repeat combinations of its first ones."""
    a = rand(*batch, m, true_rank, seed=seed) @ rand(*batch, true_rank, r, seed=seed + 1)
    return FactoredMatrix(a, rand(*batch, r, n, seed=seed + 2))


CASES = {
    "one": lambda: FactoredMatrix(rand(7, 3), rand(3, 5, seed=1)),
    "batched": lambda: FactoredMatrix(rand(2, 3, 6, 4), rand(2, 3, 4, 6, seed=1)),
    "broadcast": lambda: FactoredMatrix(rand(3, 1, 6, 4), rand(5, 4, 6, seed=1)),
    "wide inner": lambda: FactoredMatrix(rand(4, 9), rand(9, 5, seed=1)),  # r > m, n
    "rank-deficient": deficient,
    "zero": lambda: FactoredMatrix(torch.zeros(5, 2, **F64), rand(2, 5)),
}


@pytest.fixture(params=list(CASES))
def fm(request):
    return CASES[request.param]()


def test_shape_and_full(fm):
    full = fm.A @ fm.B
    assert fm.shape == full.shape and fm.ndim == full.dim()
    assert torch.equal(fm.full(), full) and torch.equal(fm.materialize(), full)


def test_svd_reconstructs_and_matches_linalg(fm):
    full = fm.full()
    u, s, vh = fm.svd()
    k = min(fm.shape[-2], fm.shape[-1], fm.inner_dim)
    assert u.shape[-1] == s.shape[-1] == vh.shape[-2] == k
    assert_close(u * s[..., None, :] @ vh, full)
    eye = torch.eye(k, **F64).expand(*fm.shape[:-2], k, k)
    nonzero = s > 1e-10  # singular vectors of a zero singular value are arbitrary
    assert_close((u.mT @ u) * nonzero[..., None, :], eye * nonzero[..., None, :])
    assert_close(fm.singular_values, torch.linalg.svdvals(full)[..., :k])


def test_rank_norm(fm):
    full = fm.full()
    assert torch.equal(fm.rank, torch.linalg.matrix_rank(full))
    assert_close(fm.norm(), torch.linalg.matrix_norm(full))


def test_rank_deficient_rank_and_singular_values():
    fm = deficient()
    assert fm.inner_dim == 4 and torch.equal(fm.rank, torch.full((2, 3), 2))
    assert (fm.singular_values[..., 2:] < 1e-12).all()


def test_transpose(fm):
    assert_close(fm.T.full(), fm.full().mT)


def test_products_stay_factored(fm):
    full = fm.full()
    m, n = fm.shape[-2:]
    right, left = rand(n, 3, seed=5), rand(4, m, seed=6)
    for out, want in (
        (fm @ right, full @ right),
        (left @ fm, left @ full),
        (fm @ FactoredMatrix(rand(n, 2, seed=7), rand(2, 3, seed=8)), None),
        (FactoredMatrix(rand(4, 2, seed=7), rand(2, m, seed=8)) @ fm, None),
        (2.5 * fm, 2.5 * full),
        (fm * 2.5, 2.5 * full),
    ):
        assert isinstance(out, FactoredMatrix)
        if want is not None:
            assert_close(out.full(), want)
    other = FactoredMatrix(rand(n, 2, seed=7), rand(2, 3, seed=8))
    assert_close((fm @ other).full(), full @ other.full())
    assert (fm @ other).inner_dim == min(fm.inner_dim, 2)
    x, y = rand(n, seed=9), rand(m, seed=10)
    assert_close(fm @ x, full @ x)  # a vector in, a vector out
    assert_close(y @ fm, y @ full)


def test_eigenvalues_of_square_products():
    for fm in (
        FactoredMatrix(rand(2, 6, 3), rand(2, 3, 6, seed=1)),
        FactoredMatrix(rand(4, 7), rand(7, 4, seed=1)),  # r > n: M's own
        deficient(m=6, n=6),
    ):
        n = fm.shape[-1]
        want = torch.linalg.eigvals(fm.full())  # (…, n)
        got = fm.eigenvalues
        assert got.shape[-1] == min(n, fm.inner_dim)
        # every eigenvalue of M is one of ours or 0, and ours are M's largest by |λ|
        want = want.gather(-1, want.abs().argsort(-1, descending=True))[..., : got.shape[-1]]
        assert_close(_sorted(got), _sorted(want), atol=1e-9, rtol=1e-9)
        assert_close(got.sum(-1), torch.linalg.eigvals(fm.full()).sum(-1))  # traces agree


def _sorted(lam):
    """Complex eigenvalues in a fixed order (by real part, then imaginary), values near 0
    snapped to 0 so that their order is stable."""
    lam = torch.where(lam.abs() < 1e-9, torch.zeros_like(lam), lam)
    key = lam.real * 1e6 + lam.imag
    return lam.gather(-1, key.argsort(-1))


def test_eigenvalues_need_square():
    with pytest.raises(ValueError, match="square"):
        _ = FactoredMatrix(rand(5, 2), rand(2, 4)).eigenvalues


def test_indexing_rows_cols_and_batch():
    fm = FactoredMatrix(rand(2, 3, 6, 4), rand(2, 3, 4, 5, seed=1))
    full = fm.full()
    ids = [4, 0, 2]
    assert_close(fm.rows(ids).full(), full[..., ids, :])
    assert_close(fm.cols(torch.tensor(ids)).full(), full[..., :, ids])
    assert_close(fm[1].full(), full[1])
    assert_close(fm[1, 2].full(), full[1, 2])
    assert_close(fm[:, 0, ids].full(), full[:, 0][:, ids])
    assert_close(fm[:, :, ids, ids].full(), full[:, :, ids][..., ids])
    assert_close(fm[0, 1, 3, -1].full(), full[0, 1, 3:4, -1:])  # ints keep the dimension
    assert_close(fm[:, :, 1:4].full(), full[:, :, 1:4])
    with pytest.raises(ValueError, match="at most 4 indexes"):
        fm[0, 0, 0, 0, 0]


def test_unsqueeze_broadcasts_batches():
    left = FactoredMatrix(rand(3, 6, 2), rand(3, 2, 5, seed=1))
    right = FactoredMatrix(rand(4, 5, 2, seed=2), rand(4, 2, 6, seed=3))
    pairs = left.unsqueeze(1) @ right.unsqueeze(0)  # (3, 4, 6, 6)
    assert pairs.shape == (3, 4, 6, 6)
    assert_close(pairs.full()[2, 1], left.full()[2] @ right.full()[1])
    with pytest.raises(ValueError, match=r"batch position in 0\.\.1"):
        left.unsqueeze(2)


def test_cached_svd_and_dtype():
    fm = FactoredMatrix(rand(6, 3).float(), rand(3, 6, seed=1))  # float32 and float64
    assert fm.dtype == torch.float64 and fm.svd() is fm.svd()
    assert fm.to(torch.float32).dtype == torch.float32


def test_bad_factors_are_refused():
    with pytest.raises(ValueError, match="A's last dimension"):
        FactoredMatrix(rand(5, 3), rand(4, 5))
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        FactoredMatrix(rand(5), rand(5, 2))
    with pytest.raises(ValueError, match="do not broadcast"):
        FactoredMatrix(rand(2, 5, 3), rand(3, 3, 5))
    with pytest.raises(ValueError, match="a number c"):
        FactoredMatrix(rand(5, 3), rand(3, 5)) * rand(2)
    with pytest.raises(ValueError, match="tensor or a FactoredMatrix"):
        FactoredMatrix(rand(5, 3), rand(3, 5)) @ [1.0, 2.0, 3.0, 4.0, 5.0]
