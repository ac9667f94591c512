"""Quadratic problems f(X) = 1/2 <X - X*, A (X - X*) B> + f* with PSD A (m x m), B (n x n).

grad f(X) = A (X - X*) B, so grad f(X) - grad f(Y) = A D B with D = X - Y and the best
A2 constant is the operator norm  L = sup_{||D|| <= 1} ||A D B||_*  (norm -> dual norm).
Certified values (a_i, b_i: eigenvalues of A, B in decreasing order, k = min(m, n)):

* Frobenius / l_2 (self-dual): A D B = (B (x) A) vec D, and the eigenvalues of the PSD
  Kronecker product are a_i b_j, so L = a_1 b_1 exactly.
* Spectral / nuclear: L = sum_{i<=k} a_i b_i exactly. Upper bound: Horn's inequality
  prod_{i<=j} s_i(XY) <= prod_{i<=j} s_i(X) s_i(Y) (log-majorisation implies weak
  majorisation) applied twice gives ||A D B||_nuc <= sum_i a_i s_i(D) b_i
  <= ||D||_2 sum_{i<=k} a_i b_i. Attained: A = U diag(a) U^T, B = V diag(b) V^T,
  D = U I_{m x n} V^T (||D||_2 = 1) gives A D B = U diag(a_i b_i) V^T.
  (The simpler ||A||_2 ||B||_2 min(m, n) is looser whenever the spectra decay.)
* Sign (l_inf / l_1 entrywise): L = max_{||V||_inf <= 1} ||A V B||_1; the map V ->
  ||A V B||_1 is convex, so its maximum over the cube is attained at a vertex
  V in {-1, 1}^{m x n}: enumerated exactly when m n <= 16; otherwise the proven bound
  ||A V B||_1 <= sum_{ij} (|A| 1 1^T |B|)_{ij} = (1^T |A| 1)(1^T |B| 1) is used.

Vectors x in R^d with Hessian H are the case m = 1, A = [1], B = H: f = 1/2 x^T H x.
Matrix least squares f(X) = 1/(2N) ||C X - Y||_F^2 is the case A = C^T C / N, B = I,
X* = argmin (lstsq), f* = f(X*) (computed in float64: certified up to rounding).
"""
from __future__ import annotations

import itertools

import torch

from .base import Certificate, Problem, check_positive

MAX_ENUM = 16


def _eig_desc(M: torch.Tensor) -> torch.Tensor:
    return torch.linalg.eigvalsh(M).flip(-1).clamp_min(0.0)


def _check_psd(M: torch.Tensor, name: str) -> None:
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {tuple(M.shape)}")
    if not torch.allclose(M, M.T, atol=1e-10 * float(M.abs().max() + 1)):
        raise ValueError(f"{name} must be symmetric")
    if float(torch.linalg.eigvalsh(M).min()) < -1e-10 * float(M.abs().max() + 1):
        raise ValueError(f"{name} must be positive semidefinite")


def sign_constant_enumerated(A: torch.Tensor, B: torch.Tensor) -> float:
    """max over V in {-1,1}^{m x n} of ||A V B||_1 (exact A2 constant in l_inf / l_1).

    Only half the vertices are needed (V and -V give the same value)."""
    m, n = A.shape[0], B.shape[0]
    d = m * n
    if d > MAX_ENUM:
        raise ValueError(f"m n = {d} > {MAX_ENUM}: too many vertices to enumerate")
    signs = torch.tensor(list(itertools.product((1.0, -1.0), repeat=d - 1)), dtype=A.dtype)
    signs = signs.reshape(-1, d - 1) if d > 1 else torch.ones((1, 0), dtype=A.dtype)
    V = torch.cat([torch.ones((signs.shape[0], 1), dtype=A.dtype), signs], dim=1).reshape(-1, m, n)
    return float((A @ V @ B).abs().sum(dim=(-2, -1)).max())


class Quadratic(Problem):
    """f(X) = 1/2 <X - X*, A (X - X*) B> + f_star (see the module docstring for L)."""

    def __init__(self, A, B, Xstar, geometry, f_star: float = 0.0, x0=None,
                 name: str = "quadratic", f_star_exact: bool = True):
        A = torch.as_tensor(A, dtype=torch.float64)
        B = torch.as_tensor(B, dtype=torch.float64)
        _check_psd(A, "A")
        _check_psd(B, "B")
        Xstar = torch.as_tensor(Xstar, dtype=torch.float64)
        if Xstar.shape != (A.shape[0], B.shape[0]):
            raise ValueError(f"Xstar must have shape {(A.shape[0], B.shape[0])}, got {tuple(Xstar.shape)}")
        self.A, self.B, self.Xstar = A, B, Xstar
        self.shape = (A.shape[0], B.shape[0])
        self.geometry = geometry
        self.f_star = float(f_star)
        self.f_star_exact = f_star_exact
        self.name = name
        self._x0 = torch.zeros(self.shape, dtype=torch.float64) if x0 is None else torch.as_tensor(x0, dtype=torch.float64)
        self._cert = None

    def f(self, X):
        D = X - self.Xstar
        return 0.5 * (D * (self.A @ D @ self.B)).sum(dim=(-2, -1)) + self.f_star

    def grad(self, X):
        return self.A @ (X - self.Xstar) @ self.B

    def x0(self):
        return self._x0.clone()

    def scaled(self, c: float) -> "Quadratic":
        check_positive(c, "c")
        return Quadratic(c * self.A, self.B, self.Xstar, self.geometry, c * self.f_star,
                         self._x0, f"{self.name}*{c:g}", self.f_star_exact)

    def certificate(self) -> Certificate:
        if self._cert is None:
            self._cert = self._compute_certificate()
        return self._cert

    def _compute_certificate(self) -> Certificate:
        a, b = _eig_desc(self.A), _eig_desc(self.B)
        name = self.geometry.name
        if name in ("frobenius", "l2"):
            return Certificate(float(a[0] * b[0]), True, "L = a_1 b_1 (eigenvalues of B (x) A)")
        if name == "spectral":
            k = min(self.shape)
            return Certificate(float((a[:k] * b[:k]).sum()), True,
                               "L = sum_{i<=min(m,n)} a_i b_i (Horn's inequality; attained)")
        if name == "sign":
            if self.shape[0] * self.shape[1] <= MAX_ENUM:
                return Certificate(sign_constant_enumerated(self.A, self.B), True,
                                   "L = max over cube vertices of ||A V B||_1 (enumerated)")
            bound = float(self.A.abs().sum() * self.B.abs().sum())
            return Certificate(bound, False, "L <= (1^T|A|1)(1^T|B|1) (entrywise triangle inequality)")
        raise ValueError(f"geometry: no certificate for {name!r} (use spectral, frobenius, sign, l2)")


def random_psd(n: int, generator: torch.Generator, cond: float = 10.0, rank: int | None = None,
               top: float = 1.0) -> torch.Tensor:
    """U diag(lam) U^T with Haar-ish U (QR of a Gaussian) and log-spaced eigenvalues
    from ``top`` down to ``top / cond``; the last n - rank eigenvalues are 0."""
    check_positive(cond, "cond")
    G = torch.randn((n, n), generator=generator, dtype=torch.float64)
    U, _ = torch.linalg.qr(G)
    lam = top * torch.logspace(0, -torch.log10(torch.tensor(float(cond))).item(), n, dtype=torch.float64)
    if rank is not None:
        lam[rank:] = 0.0
    M = (U * lam) @ U.T
    return 0.5 * (M + M.T)


def random_quadratic(m: int, n: int, geometry, generator: torch.Generator, cond_a: float = 10.0,
                     cond_b: float = 10.0, scale: float = 1.0, dist: float = 3.0) -> Quadratic:
    """A random instance: PSD A, B with the given conditioning, X* Gaussian with
    entries of size ``dist``, x_0 = 0 (so Delta_0 = f(0))."""
    A = random_psd(m, generator, cond_a, top=scale)
    B = random_psd(n, generator, cond_b)
    Xs = dist * torch.randn((m, n), generator=generator, dtype=torch.float64)
    return Quadratic(A, B, Xs, geometry, name=f"quadratic{m}x{n}")


def vector_quadratic(H, geometry, xstar=None, x0=None, name: str = "vector_quadratic") -> Quadratic:
    """f(x) = 1/2 (x - x*)^T H (x - x*) on x of shape (1, d) (A = [1], B = H)."""
    H = torch.as_tensor(H, dtype=torch.float64)
    d = H.shape[0]
    xs = torch.zeros((1, d), dtype=torch.float64) if xstar is None else torch.as_tensor(xstar, dtype=torch.float64).reshape(1, d)
    return Quadratic(torch.ones((1, 1), dtype=torch.float64), H, xs, geometry, x0=x0, name=name)


def least_squares(C, Y, geometry, x0=None, name: str = "least_squares") -> Quadratic:
    """f(X) = 1/(2N) ||C X - Y||_F^2 = 1/2 <D, A D> + f* with A = C^T C / N, D = X - X*."""
    C = torch.as_tensor(C, dtype=torch.float64)
    Y = torch.as_tensor(Y, dtype=torch.float64)
    if C.ndim != 2 or Y.ndim != 2 or C.shape[0] != Y.shape[0]:
        raise ValueError(f"C (N x m) and Y (N x n) must share N, got {tuple(C.shape)}, {tuple(Y.shape)}")
    N = C.shape[0]
    Xs = torch.linalg.lstsq(C, Y).solution
    fstar = float(0.5 / N * ((C @ Xs - Y) ** 2).sum())
    A = C.T @ C / N
    A = 0.5 * (A + A.T)
    return Quadratic(A, torch.eye(Y.shape[1], dtype=torch.float64), Xs, geometry, fstar, x0, name,
                     f_star_exact=True)


def random_least_squares(m: int, n: int, geometry, generator: torch.Generator, N: int | None = None,
                         noise: float = 0.5, scale: float = 1.0) -> Quadratic:
    """C Gaussian (N x m) / sqrt(scale^-1), Y = C X_true + noise (so f* > 0)."""
    N = N or 2 * m
    C = torch.randn((N, m), generator=generator, dtype=torch.float64) * scale ** 0.5
    Xt = 2.0 * torch.randn((m, n), generator=generator, dtype=torch.float64)
    Y = C @ Xt + noise * torch.randn((N, n), generator=generator, dtype=torch.float64)
    return least_squares(C, Y, geometry, name=f"least_squares{m}x{n}")
