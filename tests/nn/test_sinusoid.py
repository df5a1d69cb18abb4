"""The sinusoid's numbers (nn/sinusoid.py): the two layouts of one table, and the shift matrix
M with r_{k+1} = M r_k ("Brief Notes on Transformers", Positional Encodings)."""

import math

import pytest
import torch

from glassformer.nn import SinusoidalPositionalEncoding
from glassformer.nn.sinusoid import shift_matrix, sinusoid_table

LAYOUTS = ("interleaved", "split")


@pytest.mark.parametrize("d", [2, 6, 64])
def test_split_is_a_fixed_permutation_of_interleaved(d):
    """Column m of the split table is interleaved column 2m (sin), column d/2 + m is 2m + 1."""
    perm = [*range(0, d, 2), *range(1, d, 2)]
    interleaved = sinusoid_table(100, d, layout="interleaved")
    split = sinusoid_table(100, d, layout="split")
    assert torch.equal(split, interleaved[:, perm])
    assert torch.equal(SinusoidalPositionalEncoding(d, 100).table, interleaved.float())


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("d, base", [(2, 10000.0), (16, 10000.0), (64, 10000.0), (32, 500.0)])
def test_shift_matrix_moves_every_position_on_by_one(layout, d, base):
    """M r_k = r_{k+1} for every k < max_len - 1: float64 to 1e-12; the model's float32
    table to 1e-5 (its rounding grows with k: checked up to k = 256)."""
    max_len = 512
    table = sinusoid_table(max_len, d, base, layout)  # (max_len, d) float64, rows r_k
    M = shift_matrix(d, layout=layout, base=base)
    assert M.shape == (d, d) and M.dtype == torch.float64
    torch.testing.assert_close(table[:-1] @ M.T, table[1:], rtol=0, atol=1e-12)  # M r_k = r_{k+1}
    torch.testing.assert_close(M @ M.T, torch.eye(d, dtype=torch.float64), rtol=0, atol=1e-14)
    pe = SinusoidalPositionalEncoding(d, max_len, base, layout)
    r = pe.table[:257]  # float32
    torch.testing.assert_close(r[:-1] @ M.T.float(), r[1:], rtol=0, atol=1e-5)
    torch.testing.assert_close(pe.shift_matrix(), M, rtol=0, atol=0)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_shift_matrix_powers_shift_by_s(layout):
    """M^s r_k = r_{k+s}, the same as s products of M; steps < 0 shifts back (M^{-1} = Mᵀ)."""
    d, max_len = 24, 200
    table = sinusoid_table(max_len, d, layout=layout)
    M = shift_matrix(d, layout=layout)
    for s in (0, 1, 2, 7, 50):
        Ms = shift_matrix(d, layout=layout, steps=s)
        torch.testing.assert_close(table[: max_len - s] @ Ms.T, table[s:], rtol=0, atol=1e-12)
        torch.testing.assert_close(Ms, torch.linalg.matrix_power(M, s), rtol=0, atol=1e-12)
    back = shift_matrix(d, layout=layout, steps=-3)
    torch.testing.assert_close(table[3:] @ back.T, table[:-3], rtol=0, atol=1e-12)
    torch.testing.assert_close(back, torch.linalg.matrix_power(M.T, 3), rtol=0, atol=1e-12)


def test_shift_matrix_is_block_rotation_by_each_frequency():
    """The split layout's M: for pair m, rows (m, m + E/2) hold [[cos ω, sin ω], [−sin ω, cos ω]]
    at columns (m, m + E/2), ω = N^{-2m/E}; every other entry is zero."""
    E = 6
    M = shift_matrix(E, layout="split")
    want = torch.zeros(E, E, dtype=torch.float64)
    for m in range(E // 2):
        w = 10000.0 ** (-2 * m / E)
        s, c = m, m + E // 2
        want[s, s], want[s, c] = math.cos(w), math.sin(w)
        want[c, s], want[c, c] = -math.sin(w), math.cos(w)
    torch.testing.assert_close(M, want, rtol=0, atol=1e-15)
