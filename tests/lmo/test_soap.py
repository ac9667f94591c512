"""SOAP: reduces to Adam without rotation and for diagonal gradients; rotation equivariance;
per-matrix batching; state round trip; smoke; bad input."""
import pytest
import torch

from lmo.base import apply_updates, load_state_dict, state_dict
from lmo.adam_family import soap
from side_by_side import assert_refusals_keep_state


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _run(opt, grads, x0):
    p = {"x": x0.clone()}
    s = opt.init(p)
    us = []
    for g in grads:
        u, s = opt.update({"x": g}, s, p)
        p = apply_updates(p, u)
        us.append(u["x"])
    return p["x"], us, s


def _soap_adam(grads, x0, lr, betas, eps):
    """Adam with the reference SOAP's eps placement: x -= lr sqrt(1-b2^t)/(1-b1^t) m/(sqrt(v)+eps)."""
    b1, b2 = betas
    x, m, v = x0.clone(), torch.zeros_like(x0), torch.zeros_like(x0)
    for t, g in enumerate(grads, start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        x = x - lr * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t) * m / (v.sqrt() + eps)
    return x


def _torch_adam(grads, x0, lr, betas, eps):
    x = x0.clone().requires_grad_(True)
    ref = torch.optim.Adam([x], lr=lr, betas=betas, eps=eps)
    for g in grads:
        x.grad = g.clone()
        ref.step()
    return x.detach()


@pytest.mark.parametrize("case", ["vector", "too_big"])
def test_no_rotation_is_adam_after_the_first_call(case):
    """1-D params with precondition_1d=False, or sides above max_precond_dim: Adam on g_2..

    eps=0: the reference adds eps to sqrt(v) before bias correction, torch to sqrt(v/(1-b2^t)).
    """
    shape = (7,) if case == "vector" else (5, 4)
    grads = [_randn(*shape, seed=i) for i in range(6)]
    x0 = _randn(*shape, seed=99)
    opt = soap(0.01, eps=0.0, weight_decay=0.0, precondition_frequency=1, max_precond_dim=3)
    x, us, _ = _run(opt, grads, x0)
    assert torch.count_nonzero(us[0]) == 0
    torch.testing.assert_close(x, _torch_adam(grads[1:], x0, 0.01, (0.95, 0.95), 0.0), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("freq", [1, 3])
def test_diagonal_gradients_commute_so_soap_is_adam(freq):
    """Diagonal G: L, R diagonal, eigenbases are signed permutations, Adam commutes with them."""
    n = 5
    scale = torch.arange(1, n + 1, dtype=torch.float64)  # distinct magnitudes: stable order
    grads = [torch.diag(scale * (1 + 0.3 * _randn(n, seed=i))) for i in range(8)]
    x0 = _randn(n, n, seed=5)
    x, _, _ = _run(soap(0.02, weight_decay=0.0, precondition_frequency=freq), grads, x0)
    torch.testing.assert_close(x, _soap_adam(grads[1:], x0, 0.02, (0.95, 0.95), 1e-8), rtol=1e-9, atol=1e-10)


def test_rotation_equivariance():
    """Gradients U G V^T give updates U d V^T (true of SOAP, false of Adam or a transposed Q)."""
    m, n = 5, 5  # square: G G^T and G^T G full rank at the first call (no degenerate eigenspace)
    U = torch.linalg.qr(_randn(m, m, seed=1))[0]
    V = torch.linalg.qr(_randn(n, n, seed=2))[0]
    grads = [_randn(m, n, seed=10 + i) for i in range(7)]
    opt = soap(0.05, weight_decay=0.1, precondition_frequency=2)
    x0 = _randn(m, n, seed=3)
    _, us, _ = _run(opt, grads, x0)
    _, us_rot, _ = _run(opt, [U @ g @ V.T for g in grads], U @ x0 @ V.T)
    for a, b in zip(us, us_rot):
        torch.testing.assert_close(U @ a @ V.T, b, rtol=1e-7, atol=1e-9)
    # the same check fails for an optimizer that is not rotation-equivariant (plain Adam)
    noq = soap(0.05, weight_decay=0.1, max_precond_dim=1)
    _, ua, _ = _run(noq, grads, x0)
    _, ua_rot, _ = _run(noq, [U @ g @ V.T for g in grads], U @ x0 @ V.T)
    assert not torch.allclose(U @ ua[-1] @ V.T, ua_rot[-1], atol=1e-6)


def test_batched_equals_per_matrix_and_roundtrip():
    grads = [_randn(3, 5, 4, seed=i) for i in range(5)]
    opt = soap(0.01, precondition_frequency=2)
    x0 = _randn(3, 5, 4, seed=7)
    xb, _, sb = _run(opt, grads, x0)
    for i in range(3):
        xi, _, _ = _run(opt, [g[i] for g in grads], x0[i])
        torch.testing.assert_close(xb[i], xi)
    s2 = load_state_dict(opt.init({"x": x0}), state_dict(sb))
    p = {"x": xb}
    g = _randn(3, 5, 4, seed=50)
    torch.testing.assert_close(opt.update({"x": g}, s2, p)[0]["x"], opt.update({"x": g}, sb, p)[0]["x"])
    vb = soap(0.01, batch_dims=1, precondition_1d=True)
    s = vb.init({"b": torch.zeros(2, 6)})
    assert s.GG_L["b"].shape == (2, 6, 6) and s.GG_R["b"].numel() == 0


def test_least_squares_converges():
    g = torch.Generator().manual_seed(0)
    A, B = torch.randn(12, 6, generator=g, dtype=torch.float64), torch.randn(12, 4, generator=g, dtype=torch.float64)
    X_star = torch.linalg.lstsq(A, B).solution
    loss = lambda X: 0.5 * ((A @ X - B) ** 2).sum()  # noqa: E731
    opt = soap(lambda t: 0.05 * (1 - t / 300), weight_decay=0.0)
    p = {"X": torch.zeros(6, 4, dtype=torch.float64)}
    s = opt.init(p)
    for _ in range(300):
        u, s = opt.update({"X": A.T @ (A @ p["X"] - B)}, s, p)
        p = apply_updates(p, u)
    assert float((loss(p["X"]) - loss(X_star)) / (loss(torch.zeros(6, 4, dtype=torch.float64)) - loss(X_star))) < 1e-4


def test_bad_input():
    with pytest.raises(ValueError, match="precondition_frequency"):
        soap(precondition_frequency=0)
    with pytest.raises(ValueError, match="shampoo_beta"):
        soap(shampoo_beta=1.0)
    with pytest.raises(ValueError, match="event part"):
        soap(batch_dims=0).init({"k": torch.zeros(2, 3, 4)})
    assert_refusals_keep_state(soap(0.01), (3, 2))


def _official_soap(grads, x0, lr, b1, b2, eps, wd, freq):
    """nikhilvyas/SOAP ``SOAP.step`` for one 2-D tensor (no merge_dims), re-typed as a loop."""
    x = x0.clone()
    GG = [torch.zeros(n, n, dtype=x.dtype) for n in x.shape]
    Q, m, v, step = None, torch.zeros_like(x), torch.zeros_like(x), 0

    def project(g, back=False):
        for q in Q:
            g = torch.tensordot(g, q, dims=[[0], [1 if back else 0]])
        return g

    def update_preconditioner(g):
        nonlocal Q, m, v
        if Q is not None:
            m = project(m, back=True)
        GG[0].lerp_(g @ g.T, 1 - b2)
        GG[1].lerp_(g.T @ g, 1 - b2)
        if Q is None:
            Q = [torch.linalg.eigh(M + 1e-30 * torch.eye(M.shape[0], dtype=M.dtype))[1].flip(1) for M in GG]
        if step > 0 and step % freq == 0:
            new = []
            for ind, (M, o) in enumerate(zip(GG, Q)):
                idx = torch.argsort(torch.diag(o.T @ M @ o), descending=True)
                v = v.index_select(ind, idx)
                new.append(torch.linalg.qr(M @ o[:, idx])[0])
            Q = new
        if step > 0:
            m = project(m)

    for g in grads:
        if Q is None:
            update_preconditioner(g)
            continue
        gp = project(g)
        step += 1
        m = b1 * m + (1 - b1) * gp
        v = b2 * v + (1 - b2) * gp * gp
        size = lr * (1 - b2 ** step) ** 0.5 / (1 - b1 ** step)
        x = x - size * project(m / (v.sqrt() + eps), back=True)
        x = x - lr * wd * x
        update_preconditioner(g)
    return x


@pytest.mark.parametrize("freq", [1, 2, 3])
def test_matches_official_code_recursion(freq):
    grads = [_randn(5, 3, seed=60 + i) for i in range(8)]
    x0 = _randn(5, 3, seed=4)
    x, _, _ = _run(soap(0.03, betas=(0.9, 0.95), weight_decay=0.1, precondition_frequency=freq), grads, x0)
    torch.testing.assert_close(x, _official_soap(grads, x0, 0.03, 0.9, 0.95, 1e-8, 0.1, freq),
                               rtol=1e-7, atol=1e-9)
