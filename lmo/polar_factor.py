"""Newton-Schulz orthogonalization: an SVD-free approximation of polar(G) = U V^T.

For G = U S V^T (thin SVD), polar(G) = U V^T. Newton-Schulz runs an odd quintic
matrix polynomial on X_0 = G / ||G||_F (so every singular value lies in (0, 1]):

    A_k     = X_k X_k^T
    X_{k+1} = a_k X_k + (b_k A_k + c_k A_k^2) X_k
            = U p_k(S_k) V^T,   p_k(s) = a_k s + b_k s^3 + c_k s^5,

so singular vectors are kept and only singular values move towards 1 (zero
singular values stay exactly zero). Tall matrices are transposed first so the
Gram matrix A_k is the smaller min(m, n)^2 one. Cost per step for X of shape
(m, n), m <= n: 4 m^2 n + 2 m^3 FLOPs (30 n^3 for five square steps); for
unbatched m >= SYM_MIN_BLOCKS * SYM_BLOCK (= 1024) the two symmetric products
(X X^T and A^2) multiply only their block upper triangle (``sym_product``), saving
up to ~1/3 of the FLOPs.

Coefficient sets (``NS_COEFFICIENTS``):
- "keller": (3.4445, -4.7750, 2.0315) every step (Keller Jordan's Muon; also the
  default of torch.optim.Muon). Maximises the slope at 0; the output singular values
  do NOT converge to 1 but settle in a band around it (see ``KELLER_BAND``).
- "polar_express": the 5-step per-iteration schedule of Amsel, Persson, Musco, Gower,
  "The Polar Express" (arXiv:2505.16932), in the form used by modded-nanogpt and
  nanochat (numbers as in modded-nanogpt's train_gpt.py / nanochat's optim), which
  normalise by ||G||_F * (1 + 2e-2) (a 2% safety factor); ``steps <= 5`` uses the
  first ``steps`` entries (nanochat's convention).
- "quintic": the classical convergent quintic (15/8, -10/8, 3/8) (Taylor expansion of
  (1 - (1 - s^2))^{-1/2}); slow start, but converges to polar(G) as steps -> inf for
  full-rank G; used to cross-check against the exact polar.
- user lists: one (a, b, c) tuple = used for every step; a list of tuples = one per
  step (needs at least ``steps`` entries; the first ``steps`` are used).
"""
from __future__ import annotations

import math
from typing import Sequence, Union

import torch
from torch import Tensor

from lmo.base import check_int
from lmo.ns_dtype import AUTO, check_ns_dtype, choose_ns_dtype

__all__ = ["NS_COEFFICIENTS", "NS_SAFETY", "KELLER_BAND", "GRAM_RESTARTS", "resolve_coefficients",
           "resolve_dtype", "newton_schulz", "newton_schulz_many", "orthogonalize_many", "gram_iterate", "sym_product",
           "polar", "ns_inexactness", "choose_ns_dtype"]

_KELLER = (3.4445, -4.7750, 2.0315)

NS_COEFFICIENTS: dict[str, list[tuple[float, float, float]]] = {
    "keller": [_KELLER] * 5,
    # Polar Express, 5 iterations, safety factor 2e-2, cushion 2 (arXiv:2505.16932);
    # numbers as in modded-nanogpt train_gpt.py `polar_express_coeffs` and nanochat.
    "polar_express": [
        (8.156554524902461, -22.48329292557795, 15.878769915207462),
        (4.042929935166739, -2.808917465908714, 0.5000178451051316),
        (3.8916678022926607, -2.772484153217685, 0.5060648178503393),
        (3.285753657755655, -2.3681294933425376, 0.46449024233003106),
        (2.3465413258596377, -1.7097828382687081, 0.42323551169305323),
    ],
    "quintic": [(15 / 8, -10 / 8, 3 / 8)] * 5,
}
# Named sets whose single tuple repeats for any number of steps.
_REPEATING = {"keller", "quintic"}
# Frobenius pre-normalisation is by ||G||_F * NS_SAFETY[name] (1.0 when not listed).
NS_SAFETY: dict[str, float] = {"polar_express": 1.02}
# Documented singular-value band of the 5-step NS output for "keller" and
# "polar_express" (fp32/fp64; input condition number <= 10; bf16 widens it by ~0.05).
# Observed: keller ~[0.68, 1.14], polar_express ~[0.86, 1.14] (tests/lmo/test_newton_schulz.py).
KELLER_BAND = (0.6, 1.25)

Coefficients = Union[str, Sequence[float], Sequence[Sequence[float]]]
# Gram NS restarts (re-forms X and its Gram matrix) before these step indices (0-based).
GRAM_RESTARTS = (2,)


def resolve_coefficients(coefficients: Coefficients, steps: int) -> list[tuple[float, float, float]]:
    """Turn ``coefficients`` (a name, one (a, b, c) tuple, or a per-step list) into
    exactly ``steps`` (a, b, c) tuples; raise ValueError naming the parameter.

    >>> resolve_coefficients("keller", 2)
    [(3.4445, -4.775, 2.0315), (3.4445, -4.775, 2.0315)]
    >>> len(resolve_coefficients("polar_express", 5))
    5
    """
    check_int(steps, "steps")
    if isinstance(coefficients, str):
        if coefficients not in NS_COEFFICIENTS:
            raise ValueError(f"coefficients: unknown name {coefficients!r}; "
                             f"known: {sorted(NS_COEFFICIENTS)}")
        table = NS_COEFFICIENTS[coefficients]
        if coefficients in _REPEATING:
            return [table[0]] * steps
        if steps > len(table):
            raise ValueError(f"steps={steps} exceeds the {len(table)}-step schedule "
                             f"coefficients={coefficients!r}")
        return list(table[:steps])
    try:
        seq = list(coefficients)
    except TypeError:
        raise ValueError(f"coefficients must be a name, an (a, b, c) tuple or a list of "
                         f"them, got {coefficients!r}") from None
    if len(seq) == 3 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in seq):
        seq = [tuple(seq)]  # one tuple for every step
        repeat = True
    else:
        repeat = len(seq) == 1
    out = []
    for i, t in enumerate(seq):
        try:
            t = tuple(float(v) for v in t)
        except (TypeError, ValueError):
            raise ValueError(f"coefficients[{i}] must be an (a, b, c) tuple of numbers, "
                             f"got {t!r}") from None
        if len(t) != 3 or not all(math.isfinite(v) for v in t):
            raise ValueError(f"coefficients[{i}] must be 3 finite numbers (a, b, c), got {t!r}")
        out.append(t)
    if not out:
        raise ValueError("coefficients: empty list")
    if repeat:
        return out * steps
    if len(out) < steps:
        raise ValueError(f"coefficients has {len(out)} per-step tuples but steps={steps}")
    return out[:steps]


def _check_matrix(G: Tensor, name: str = "G") -> None:
    if not isinstance(G, Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(G).__name__}")
    if G.ndim < 2:
        raise ValueError(f"{name} must have at least 2 dims (..., m, n), got shape {tuple(G.shape)}")
    if not G.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got {G.dtype}")


# Row-block size of sym_product; matrices with fewer than SYM_MIN_BLOCKS blocks use one
# plain matmul (small blocks run below the matmul rate; measured by lmo.bench.ns).
SYM_BLOCK = 128
SYM_MIN_BLOCKS = 8


def sym_product(X: Tensor, C: Tensor | None = None, beta: float = 0.0, alpha: float = 1.0,
                block: int | None = None) -> Tensor:
    """beta C + alpha X X^T for a 2-D X of shape (m, k) and a symmetric C (m, m).

    The result is symmetric, so only the block upper triangle is multiplied (row block
    i times the rows >= i of X) and mirrored: with p blocks this costs (p + 1) / (2 p)
    of the full 2 m^2 k FLOPs (0.56 for p = 8). Fused with C through addmm.
    ``block`` defaults to SYM_BLOCK; below SYM_MIN_BLOCKS blocks one plain matmul is used.

    >>> X = torch.tensor([[1.0, 2.0], [0.0, 1.0]])
    >>> sym_product(X)                                   # X X^T
    tensor([[5., 2.],
            [2., 1.]])
    """
    block = SYM_BLOCK if block is None else block
    m = X.shape[0]
    if m < SYM_MIN_BLOCKS * block:
        return X @ X.mT if C is None else torch.addmm(C, X, X.mT, beta=beta, alpha=alpha)
    out = torch.empty(m, m, dtype=X.dtype, device=X.device)
    for i in range(0, m, block):
        j = min(i + block, m)
        rest = X[i:].mT
        blk = X[i:j] @ rest if C is None else torch.addmm(C[i:j, i:], X[i:j], rest,
                                                           beta=beta, alpha=alpha)
        out[i:j, i:] = blk
        out[j:, i:j] = blk[:, j - i:].mT
    return out


def resolve_dtype(dtype, device) -> torch.dtype | None:
    """``dtype`` for NS on ``device``: "auto" -> choose_ns_dtype(device) (lmo.ns_dtype, a pure
    function of the device: bf16 on CUDA, fp32 elsewhere), None -> None (the input's dtype),
    a name ("float32", "bfloat16", ...) or a floating torch.dtype -> that dtype.

    >>> resolve_dtype("auto", torch.device("cpu")), resolve_dtype(None, torch.device("cpu"))
    (torch.float32, None)
    """
    dtype = check_ns_dtype(dtype, "dtype")
    return choose_ns_dtype(device) if dtype == AUTO else dtype


def newton_schulz(G: Tensor, steps: int = 5, coefficients: Coefficients = "keller",
                  eps: float = 1e-7, dtype: torch.dtype | str | None = None, *,
                  safety: float | None = None, method: str = "standard",
                  restarts: Sequence[int] = GRAM_RESTARTS) -> Tensor:
    """Approximate polar(G) = U V^T of every matrix in G (shape (..., m, n)).

    X_0 = G / max(s ||G||_F, eps) per matrix (s = ``safety``, default NS_SAFETY of the
    named set, else 1), then ``steps`` quintic steps X <- a X + (b A + c A^2) X with
    A = X X^T (the smaller Gram: tall matrices are transposed). Computes in ``dtype``
    (default: G's dtype; e.g. torch.bfloat16 like Muon; "auto": ``choose_ns_dtype(G.device)``)
    and returns G's dtype. Batched over leading dims (per-matrix normalisation; the
    batch never mixes; the batched products are the 2-D path's, so a slice of a batch
    equals the 2-D result below the blocked size). Zero matrices map to zero.
    ``method="gram"``: the same polynomial iterated on the Gram matrix (``gram_iterate``,
    restarted before the steps listed in ``restarts``).

    >>> O = newton_schulz(torch.diag(torch.tensor([2.0, 3.0])), dtype=torch.float32)
    >>> torch.linalg.svdvals(O)          # in Keller's band around 1 (KELLER_BAND), not at 1
    tensor([1.1171, 0.6821])
    """
    _check_matrix(G)
    if not (isinstance(eps, (int, float)) and eps > 0):
        raise ValueError(f"eps must be a positive number, got {eps!r}")
    if method not in ("standard", "gram"):
        raise ValueError(f"method must be 'standard' or 'gram', got {method!r}")
    dtype = resolve_dtype(dtype, G.device)
    coeffs = resolve_coefficients(coefficients, steps)
    if safety is None:
        safety = NS_SAFETY.get(coefficients, 1.0) if isinstance(coefficients, str) else 1.0
    out_dtype = G.dtype
    X = G.to(dtype or G.dtype)
    transposed = X.shape[-2] > X.shape[-1]
    if transposed:
        X = X.mT
    batch_shape = X.shape[:-2]
    m, n = X.shape[-2:]
    if method == "gram":
        X = X.reshape(-1, m, n) if X.ndim > 2 else X
        norms = torch.linalg.vector_norm(X, dim=(-2, -1), keepdim=True)
        X = gram_iterate(X / (norms * safety).clamp(min=eps), coeffs, restarts)
        X = X.reshape(*batch_shape, m, n)
    elif X.ndim == 2:
        X = X / (torch.linalg.vector_norm(X) * safety).clamp(min=eps)
        for a, b, c in coeffs:
            A = sym_product(X)                           # X X^T
            B = sym_product(A, A, beta=b, alpha=c)       # b A + c A A^T = b A + c A^2
            X = torch.addmm(X, B, X, beta=a)             # a X + B X
    else:
        X = X.reshape(-1, m, n)
        norms = torch.linalg.vector_norm(X, dim=(-2, -1), keepdim=True)
        X = X / (norms * safety).clamp(min=eps)
        for a, b, c in coeffs:                           # the 2-D path's products, batched
            A = torch.bmm(X, X.mT)
            B = torch.baddbmm(A, A, A.mT, beta=b, alpha=c)
            X = torch.baddbmm(X, B, X, beta=a)
        X = X.reshape(*batch_shape, m, n)
    if transposed:
        X = X.mT
    return X.to(out_dtype)


def gram_iterate(X: Tensor, coeffs: Sequence[tuple[float, float, float]],
                 restarts: Sequence[int] = GRAM_RESTARTS) -> Tensor:
    """The NS steps on a normalised wide X (..., m, n), m <= n, iterated on the Gram matrix.

    Every NS iterate is X_k = Q_k X_0 with Q_k a polynomial in R_0 = X_0 X_0^T, so the
    steps can run on m x m matrices only (Gram Newton-Schulz):

        P_k = a_k I + b_k R_k + c_k R_k^2,   Q_{k+1} = P_k Q_k,   R_{k+1} = P_k R_k P_k

    and X = Q X_0 at the end. Before each step index in ``restarts`` the iterate is
    re-formed (X_0 <- Q X_0, R <- X_0 X_0^T, Q <- I), which bounds the drift of R away
    from X X^T in low precision (spurious negative eigenvalues). FLOPs for m <= n:
    2 m^2 n per segment start and end, 2-8 m^3 per step, against 4 m^2 n + 2 m^3 per
    plain step (cheaper for n >~ 2m).

    >>> X = torch.tensor([[0.5, 0.1], [0.0, 0.8]], dtype=torch.float64)
    >>> Y = X                                          # the plain iteration, for comparison
    >>> for a, b, c in [(1.5, -0.5, 0.0)] * 3:
    ...     A = Y @ Y.mT
    ...     Y = a * Y + (b * A + c * A @ A) @ Y
    >>> torch.allclose(gram_iterate(X, [(1.5, -0.5, 0.0)] * 3), Y)
    True
    """
    restarts = set(restarts)
    X0, Q, R = X, None, X @ X.mT
    for k, (a, b, c) in enumerate(coeffs):
        if k in restarts and Q is not None:
            X0 = Q @ X0
            Q, R = None, X0 @ X0.mT
        P = torch.baddbmm(R, R, R.mT, beta=b, alpha=c) if R.ndim == 3 else torch.addmm(
            R, R, R.mT, beta=b, alpha=c)
        P.diagonal(dim1=-2, dim2=-1).add_(a)             # P = a I + b R + c R^2
        Q = P if Q is None else P @ Q
        if k + 1 < len(coeffs) and (k + 1) not in restarts:
            R = P @ (R @ P)
    return X0 if Q is None else Q @ X0


def newton_schulz_many(Gs: Sequence[Tensor], steps: int = 5, coefficients: Coefficients = "keller",
                       eps: float = 1e-7, dtype: torch.dtype | str | None = None,
                       **kw) -> list[Tensor]:
    """``[newton_schulz(G) for G in Gs]`` with same-shape matrices in one batched call.

    2-D matrices below the blocked size (min(m, n) < SYM_MIN_BLOCKS * SYM_BLOCK) are
    grouped by (oriented shape, dtype, device): tall ones are transposed into their wide
    group (polar(G^T) = polar(G)^T), stacked, orthogonalised once, and split back. The
    batch never mixes matrices, so each result equals its own 2-D call (tested).

    >>> Os = newton_schulz_many([torch.eye(2), 2 * torch.eye(3), torch.ones(2, 3)], dtype=torch.float32)
    >>> [tuple(O.shape) for O in Os]
    [(2, 2), (3, 3), (2, 3)]
    """
    out: list = [None] * len(Gs)
    groups: dict = {}
    for i, G in enumerate(Gs):
        _check_matrix(G, f"Gs[{i}]")
        m, n = G.shape[-2:]
        if G.ndim != 2 or min(m, n) >= SYM_MIN_BLOCKS * SYM_BLOCK:
            out[i] = newton_schulz(G, steps, coefficients, eps, dtype, **kw)
            continue
        key = (min(m, n), max(m, n), G.dtype, G.device)
        groups.setdefault(key, []).append(i)
    for idx in groups.values():
        if len(idx) == 1:
            out[idx[0]] = newton_schulz(Gs[idx[0]], steps, coefficients, eps, dtype, **kw)
            continue
        tall = [Gs[i].shape[-2] > Gs[i].shape[-1] for i in idx]
        stack = torch.stack([Gs[i].mT if t else Gs[i] for i, t in zip(idx, tall)])
        res = newton_schulz(stack, steps, coefficients, eps, dtype, **kw)
        for j, (i, t) in enumerate(zip(idx, tall)):
            out[i] = res[j].mT if t else res[j]
    return out


def orthogonalize_many(Gs: Sequence[Tensor], exact: bool = False, steps: int = 5,
                       coefficients: Coefficients = "keller", eps: float = 1e-7,
                       dtype: torch.dtype | str | None = None, method: str = "standard") -> list[Tensor]:
    """[polar(G) (``exact``) or NS(G) (:func:`newton_schulz_many`, same-shape matrices batched)
    for G in Gs], each in G's dtype: the one route by which the Muon family (Muon and Scion's
    hidden group through ``lmo.geometry.Spectral``, NorMuon and AdaMuon through
    ``lmo.transforms.orthogonalize``, the data-parallel ``ShardedSpectral``) orthogonalises.

    >>> orthogonalize_many([torch.diag(torch.tensor([2.0, 3.0]))], exact=True)
    [tensor([[1., 0.],
            [0., 1.]])]
    """
    if exact:
        return [polar(G) for G in Gs]
    return newton_schulz_many(list(Gs), steps=steps, coefficients=coefficients, eps=eps, dtype=dtype,
                              method=method)


def polar(G: Tensor, rtol: float | None = None) -> Tensor:
    """Exact polar factor U_r V_r^T of every matrix in G via thin SVD (in >= fp32).

    Rank-deficient input: singular directions with s_i <= rtol * s_max are dropped
    (rtol default: max(m, n) * machine eps of the compute dtype), so polar(G) is the
    partial isometry U_r V_r^T on the numerical range of G; this is the unique
    minimiser of <-G, D> over ||D||_2 <= 1 with the smallest rank, and it is what NS
    converges to (zero singular values stay zero). polar(0) = 0.

    >>> polar(torch.tensor([[3.0, 0.0], [0.0, -2.0]]))
    tensor([[ 1.,  0.],
            [ 0., -1.]])
    >>> polar(torch.zeros(2, 2))
    tensor([[0., 0.],
            [0., 0.]])
    """
    _check_matrix(G)
    cdtype = torch.promote_types(G.dtype, torch.float32)
    U, S, Vh = torch.linalg.svd(G.to(cdtype), full_matrices=False)
    if rtol is None:
        rtol = max(G.shape[-2:]) * torch.finfo(cdtype).eps
    smax = S.amax(dim=-1, keepdim=True) if S.shape[-1] else S
    keep = (S > rtol * smax).to(cdtype)
    return ((U * keep.unsqueeze(-2)) @ Vh).to(G.dtype)


def ns_inexactness(G: Tensor, **ns_kwargs) -> dict[str, Tensor]:
    """How far NS(G) is from polar(G), per matrix (shapes = G's batch shape).

    Returns dict(sv_min, sv_max, spectral_error): the band [min_i s_i, max_i s_i] of
    the singular values of NS(G), and ||NS(G) - polar(G)||_2 (spectral norm).

    >>> r = ns_inexactness(torch.diag(torch.tensor([1.0, 0.5])), dtype=torch.float64)
    >>> sorted(r), bool(r["spectral_error"] < 0.35)
    (['spectral_error', 'sv_max', 'sv_min'], True)
    """
    _check_matrix(G)
    O = newton_schulz(G, **ns_kwargs)
    cdtype = torch.promote_types(G.dtype, torch.float64)
    sv = torch.linalg.svdvals(O.to(cdtype))
    err = torch.linalg.matrix_norm(O.to(cdtype) - polar(G.to(cdtype)), ord=2)
    return {"sv_min": sv.amin(dim=-1), "sv_max": sv.amax(dim=-1), "spectral_error": err}
