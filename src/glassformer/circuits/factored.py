"""A low-rank matrix kept as the product of its two factors, M = A B.

A head's OV matrix S = W_V W_O and QK matrix Y = W_Q W_Kᵀ / √d_k ("Brief Notes on
Transformers": h(x) = A(x) · x · S, A = softmax(x Y xᵀ)) are E×E matrices of rank at most D,
the head size; the token-to-token circuits W_E S W_U are V×V of the same rank (Elhage et al.
(2021), "A Mathematical Framework for Transformer Circuits"). ``FactoredMatrix(A, B)`` holds
A (..., m, r) and B (..., r, n) and answers questions about M = A B (m×n) from the factors:

* products with tensors and other factored matrices stay factored: M X = A (B X);
* the SVD is exact and costs O((m + n) r²): A = Q_a R_a and Bᵀ = Q_b R_b (thin QR), so
  M = Q_a (R_a R_bᵀ) Q_bᵀ, and the SVD of the small core R_a R_bᵀ = U_c Σ V_cᵀ gives
  M = (Q_a U_c) Σ (V_cᵀ Q_bᵀ);
* the Frobenius norm is the core's, ‖M‖_F = ‖R_a R_bᵀ‖_F (Q_a, Q_b have orthonormal columns);
* the non-zero eigenvalues of a square M = A B are those of the r×r matrix B A
  (A B v = λ v with λ ≠ 0 gives B A (B v) = λ (B v), B v ≠ 0).

Leading dimensions are batch dimensions (one matrix per (layer, head)), broadcast between A
and B. The m×n matrix is formed only by ``full()`` (``materialize()``).
"""

from __future__ import annotations

from functools import cached_property

import torch
from torch import Tensor

__all__ = ["FactoredMatrix"]


class FactoredMatrix:
    """M = A @ B from A (..., m, r) and B (..., r, n), never formed unless asked (``full()``).

    The names follow TransformerLens's FactoredMatrix, except that ``svd()`` returns
    (U, S, Vh) with M = U diag(S) Vh, torch.linalg.svd's convention."""

    def __init__(self, A: Tensor, B: Tensor) -> None:
        if not (isinstance(A, Tensor) and isinstance(B, Tensor)) or A.dim() < 2 or B.dim() < 2:
            raise ValueError(
                "FactoredMatrix(A, B) needs two tensors of at least 2 dimensions, A (..., m, r) "
                f"and B (..., r, n); got {_describe(A)} and {_describe(B)}"
            )
        if A.shape[-1] != B.shape[-2]:
            raise ValueError(
                f"FactoredMatrix(A, B): A's last dimension ({A.shape[-1]}) must equal B's "
                f"second-to-last ({B.shape[-2]}); got A {tuple(A.shape)}, B {tuple(B.shape)}"
            )
        try:
            batch = torch.broadcast_shapes(A.shape[:-2], B.shape[:-2])
        except RuntimeError:
            raise ValueError(
                f"FactoredMatrix(A, B): the batch dimensions of A {tuple(A.shape)} and B "
                f"{tuple(B.shape)} do not broadcast"
            ) from None
        dtype = torch.promote_types(A.dtype, B.dtype)  # one dtype for both factors
        self.A = A.to(dtype).expand(*batch, *A.shape[-2:])  # (..., m, r)
        self.B = B.to(dtype).expand(*batch, *B.shape[-2:])  # (..., r, n)

    # Shape --------------------------------------------------------------------------------------
    @property
    def shape(self) -> torch.Size:
        """(..., m, n): the batch dimensions and the shape of M."""
        return torch.Size((*self.A.shape[:-1], self.B.shape[-1]))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def inner_dim(self) -> int:
        """r, the factors' shared dimension: an upper bound on the rank."""
        return self.A.shape[-1]

    @property
    def dtype(self) -> torch.dtype:
        return self.A.dtype

    @property
    def device(self) -> torch.device:
        return self.A.device

    def to(self, *args, **kwargs) -> FactoredMatrix:
        """Both factors moved or cast (``.to(torch.float64)``, ``.to("cuda")``)."""
        return FactoredMatrix(self.A.to(*args, **kwargs), self.B.to(*args, **kwargs))

    def full(self) -> Tensor:
        """The m×n matrix A @ B itself (..., m, n)."""
        return self.A @ self.B

    materialize = full

    def __repr__(self) -> str:
        return f"FactoredMatrix(shape={tuple(self.shape)}, inner_dim={self.inner_dim})"

    # Algebra ------------------------------------------------------------------------------------
    @property
    def T(self) -> FactoredMatrix:
        """Mᵀ = Bᵀ Aᵀ."""
        return FactoredMatrix(self.B.mT, self.A.mT)

    def __matmul__(self, other: Tensor | FactoredMatrix) -> Tensor | FactoredMatrix:
        """M @ X: factored (A, B X) for a matrix X, or the vector A (B x) for a vector x."""
        if isinstance(other, FactoredMatrix):
            core = self.B @ other.A  # (..., r1, r2)
            if self.inner_dim <= other.inner_dim:
                return FactoredMatrix(self.A, core @ other.B)
            return FactoredMatrix(self.A @ core, other.B)
        other = _tensor(other, "the right operand of @")
        if other.dim() == 1:
            return (self.A @ (self.B @ other[:, None])).squeeze(-1)  # (..., m)
        return FactoredMatrix(self.A, self.B @ other)

    def __rmatmul__(self, other: Tensor) -> Tensor | FactoredMatrix:
        """X @ M: factored (X A, B) for a matrix X, or the vector (x A) B for a vector x."""
        other = _tensor(other, "the left operand of @")
        if other.dim() == 1:
            return ((other[None] @ self.A) @ self.B).squeeze(-2)  # (..., n)
        return FactoredMatrix(other @ self.A, self.B)

    def __mul__(self, scalar: float) -> FactoredMatrix:
        """c M = (c A) B for a number c."""
        if isinstance(scalar, Tensor) and scalar.numel() != 1:
            raise ValueError(
                f"FactoredMatrix * c needs a number c, got a tensor of shape {tuple(scalar.shape)}"
                "; use @ for a matrix product"
            )
        return FactoredMatrix(self.A * scalar, self.B)

    __rmul__ = __mul__

    # Restriction --------------------------------------------------------------------------------
    def rows(self, index) -> FactoredMatrix:
        """The rows ``index`` of M (a list, tensor or slice of row numbers): A's rows."""
        return FactoredMatrix(self.A[..., _keep_dim(index), :], self.B)

    def cols(self, index) -> FactoredMatrix:
        """The columns ``index`` of M: B's columns."""
        return FactoredMatrix(self.A, self.B[..., :, _keep_dim(index)])

    def __getitem__(self, key) -> FactoredMatrix:
        """Index the batch dimensions, then (if the key goes that far) M's rows and columns:
        ``ov[0]`` the first head's matrix, ``ov[:, ids, ids]`` every head restricted to
        the tokens ``ids``. An int row or column keeps its dimension (a 1-row matrix)."""
        key = key if isinstance(key, tuple) else (key,)
        n_batch = self.ndim - 2
        if any(k is Ellipsis or k is None for k in key) or len(key) > self.ndim:
            raise ValueError(
                f"FactoredMatrix[{key}]: give at most {self.ndim} indexes (batch dimensions, "
                "then rows, then columns), without ... or None"
            )
        batch, matrix = key[:n_batch], key[n_batch:]
        out = FactoredMatrix(self.A[batch], self.B[batch]) if batch else self
        if len(matrix) > 0:
            out = out.rows(matrix[0])
        if len(matrix) > 1:
            out = out.cols(matrix[1])
        return out

    def unsqueeze(self, dim: int) -> FactoredMatrix:
        """A new batch dimension of size 1 at ``dim`` (0 … ndim - 2), to broadcast against
        another batch: ``composition_score(ov.unsqueeze(1), qk.unsqueeze(0))`` pairs every
        head with every head."""
        if not isinstance(dim, int) or not 0 <= dim <= self.ndim - 2:
            raise ValueError(
                f"unsqueeze: dim must be a batch position in 0..{self.ndim - 2}, got {dim!r}"
            )
        return FactoredMatrix(self.A.unsqueeze(dim), self.B.unsqueeze(dim))

    # Spectra ------------------------------------------------------------------------------------
    @cached_property
    def _core(self) -> tuple[Tensor, Tensor, Tensor]:
        """(Q_a, R_a R_bᵀ, Q_b): M = Q_a (R_a R_bᵀ) Q_bᵀ, Q_a and Q_b with orthonormal columns."""
        q_a, r_a = torch.linalg.qr(self.A)  # (..., m, k1), (..., k1, r)
        q_b, r_b = torch.linalg.qr(self.B.mT)  # (..., n, k2), (..., k2, r)
        return q_a, r_a @ r_b.mT, q_b  # core (..., k1, k2)

    @cached_property
    def _svd(self) -> tuple[Tensor, Tensor, Tensor]:
        q_a, core, q_b = self._core
        u, s, vh = torch.linalg.svd(core, full_matrices=False)
        return q_a @ u, s, vh @ q_b.mT

    def svd(self) -> tuple[Tensor, Tensor, Tensor]:
        """(U (..., m, k), S (..., k), Vh (..., k, n)) with M = U diag(S) Vh, k = min(m, n, r),
        S descending: exact, from the factors (see the module docstring)."""
        return self._svd

    @property
    def singular_values(self) -> Tensor:
        """σ_1 ≥ … ≥ σ_k (..., k), k = min(m, n, r); the rest of M's are 0."""
        return self._svd[1]

    @property
    def rank(self) -> Tensor:
        """The numerical rank (...,): the singular values above max(m, n) · ε · σ_1, the
        tolerance of torch.linalg.matrix_rank (ε of the dtype); at most ``inner_dim``."""
        s = self.singular_values
        tol = max(self.shape[-2:]) * torch.finfo(s.dtype).eps * s.amax(-1, keepdim=True)
        return (s > tol).sum(-1)

    def norm(self) -> Tensor:
        """‖M‖_F (...,), the Frobenius norm, from the r×r core."""
        return torch.linalg.matrix_norm(self._core[1])

    @property
    def eigenvalues(self) -> Tensor:
        """The eigenvalues of a square M (..., min(n, r)), complex, largest |λ| first: those of
        B A (r×r) when r ≤ n, whose non-zero ones are M's (M's other n - r are 0); of M itself
        when n < r."""
        m, n = self.shape[-2:]
        if m != n:
            raise ValueError(f"eigenvalues need a square matrix, this one is {m}×{n}")
        small = self.B @ self.A if self.inner_dim <= n else self.full()
        if small.dtype in (torch.float16, torch.bfloat16):
            small = small.float()
        lam = torch.linalg.eigvals(small)
        order = lam.abs().argsort(dim=-1, descending=True, stable=True)
        return lam.gather(-1, order)


def _tensor(x, what: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise ValueError(f"{what} must be a tensor or a FactoredMatrix, got {_describe(x)}")
    return x


def _keep_dim(index):
    """An int row/column number as a slice, so the matrix keeps its dimension."""
    if isinstance(index, int):
        return slice(index, index + 1) if index != -1 else slice(-1, None)
    if isinstance(index, list | tuple):
        return torch.as_tensor(index, dtype=torch.long)
    return index


def _describe(x) -> str:
    return f"a tensor of shape {tuple(x.shape)}" if isinstance(x, Tensor) else type(x).__name__
