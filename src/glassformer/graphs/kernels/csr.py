"""A sparsity pattern: which (query, key) entries of a T×S attention matrix exist, in CSR
form (compressed rows), and the three products attention needs on it.

"Formal Algorithms for Transformers", Transformers as GNNs: on a sparse graph, Eq. (2) is wanted
only at the edges and Eq. (1) sums only over them. With the pattern's N entries (n, m):

    sample(Q, K)   a_nm = q_n · k_m at every entry            (sampled matrix product, SDDMM)
    rows(A) @ V    z_n = Σ_m A_nm v_m                          (sparse-dense product)
    cols(A) @ X    Σ_n A_nm x_n for every key m (the transpose: the keys' gradients)

each O(N·D) in time, with nothing of size N·D formed: torch's CSR kernels (MKL on CPU) read the
rows of Q, K, V in place.
"""

from __future__ import annotations

import contextlib
import warnings

import torch
import torch.nn.functional as F
from torch import Tensor


class Pattern:
    """N entries (row[i], col[i]) of a (T, S) matrix, sorted by row; an entry listed twice
    is two entries (its products add up)."""

    def __init__(self, row: Tensor, col: Tensor, shape: tuple[int, int]):
        t, s = shape
        self.shape, self.row, self.col = shape, row, col
        self.crow = F.pad(torch.bincount(row, minlength=t).cumsum(0), (1, 0))
        self.order = col.argsort(stable=True)  # the entries by key
        self.crow_t = F.pad(torch.bincount(col, minlength=s).cumsum(0), (1, 0))
        self.col_t = row[self.order]
        self._ones = {}

    @classmethod
    def per_row(cls, cols: Tensor, s: int) -> Pattern:
        """e entries in each of T rows: (T, e) key indices; entry values then view as (T, e)."""
        t, e = cols.shape
        row = torch.arange(t, device=cols.device).repeat_interleave(e)
        return cls(row, cols.flatten(), (t, s))

    @classmethod
    def of_edges(cls, edge_index: Tensor, t: int, s: int) -> Pattern:
        """PyTorch Geometric's (2, E) edges j -> i as entries (i, j), sorted by (i, j)."""
        src, dst = edge_index
        order = (dst * s + src).argsort(stable=True)
        return cls(dst[order], src[order], (t, s))

    def rows(self, values: Tensor) -> Tensor:
        """The sparse (T, S) matrix with these N entry values."""
        with _quiet():
            return torch.sparse_csr_tensor(self.crow, self.col, values.reshape(-1), self.shape)

    def cols(self, values: Tensor) -> Tensor:
        """Its transpose, (S, T)."""
        vals = values.reshape(-1)[self.order]
        with _quiet():
            return torch.sparse_csr_tensor(self.crow_t, self.col_t, vals, self.shape[::-1])

    def sample(self, a: Tensor, b: Tensor) -> Tensor:
        """(a @ bᵀ) at the entries: a (T, F), b (S, F) -> (N,)."""
        ones = self._ones.get(a.dtype)
        if ones is None:
            ones = self._ones[a.dtype] = self.rows(torch.ones_like(self.col, dtype=a.dtype))
        return torch.sparse.sampled_addmm(ones, a, b.T, beta=0.0).values()


def heads(q: Tensor, k: Tensor):
    """(batch, query head, its key/value head) for every head of q (B, H, ·, ·) and k
    (B, H_kv, ·, ·): the CSR products run one head at a time."""
    g = q.shape[1] // k.shape[1]
    for b in range(q.shape[0]):
        for h in range(q.shape[1]):
            yield b, h, h // g


@contextlib.contextmanager
def _quiet():
    """Torch warns that CSR tensors are a beta feature; only construction, sampled_addmm and
    addmm with a CSR matrix are used here."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        warnings.filterwarnings("ignore", message="Sparse invariant checks")
        yield
