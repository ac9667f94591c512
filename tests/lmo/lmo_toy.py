"""Deterministic toy problems shared by the lmo tests: a separable quadratic per block (the
delay-wrapper tests) and least squares (the optimizers' convergence smoke tests)."""
import torch

from lmo.base import apply_updates


def make(seed=0, shapes=(("a", (4, 3)), ("b", (3, 3)), ("c", (5,)))):
    g = torch.Generator().manual_seed(seed)
    A = {k: torch.randn(*s, generator=g, dtype=torch.float64) for k, s in shapes}
    x0 = {k: torch.randn(*s, generator=g, dtype=torch.float64) for k, s in shapes}
    target = {k: torch.randn(*s, generator=g, dtype=torch.float64) for k, s in shapes}

    def grad(x):
        # separable smooth objective with a data-dependent curvature: g = A * (A * x - target)
        return {k: A[k] * (A[k] * x[k] - target[k]) for k in x}

    return x0, grad


def run(opt, x0, grad, steps):
    """``steps`` steps of ``opt`` from x0 on gradients ``grad(x)``: ([x_0, ..., x_T], final state)."""
    x, s, traj = dict(x0), opt.init(x0), [dict(x0)]
    for _ in range(steps):
        u, s = opt.update(grad(x), s, x)
        x = apply_updates(x, u)
        traj.append(x)
    return traj, s


def gaussian(shape, seed=0):
    """A float64 N(0, 1) tensor of ``shape``, reproducible from ``seed``."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def lsq_problem(m=12, n=6, k=4, seed=0, dtype=torch.float64):
    """f(X) = 1/2 ||A X - B||_F^2 with A (m, n), B (m, k): (f, grad f, X*, X_0 = 0)."""
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(m, n, generator=g, dtype=dtype)
    B = torch.randn(m, k, generator=g, dtype=dtype)
    X_star = torch.linalg.lstsq(A, B).solution
    loss = lambda X: 0.5 * ((A @ X - B) ** 2).sum()  # noqa: E731
    grad = lambda X: A.T @ (A @ X - B)  # noqa: E731
    return loss, grad, X_star, torch.zeros(n, k, dtype=dtype)


def run_lsq(opt, steps=300, **kw):
    """Relative excess loss (f(X_T) - f*) / (f(X_0) - f*) after ``steps`` steps on lsq_problem(**kw)."""
    loss, grad, X_star, X0 = lsq_problem(**kw)
    p = {"X": X0}
    s = opt.init(p)
    for _ in range(steps):
        u, s = opt.update({"X": grad(p["X"])}, s, p)
        p = apply_updates(p, u)
    return float((loss(p["X"]) - loss(X_star)) / (loss(X0) - loss(X_star)))


def vector_lsq_excess(opt, steps=400):
    """(f(x_T) - f*) / f(0) for f(x) = 1/2 ||A x - b||^2, A (20, 5), b (20,), in float32."""
    g = torch.Generator().manual_seed(0)
    A, b = torch.randn(20, 5, generator=g), torch.randn(20, generator=g)
    x_star = torch.linalg.lstsq(A, b.unsqueeze(1)).solution.squeeze(1)
    loss = lambda x: 0.5 * ((A @ x - b) ** 2).sum()  # noqa: E731
    p = {"x": torch.zeros(5)}
    s = opt.init(p)
    for _ in range(steps):
        u, s = opt.update({"x": A.T @ (A @ p["x"] - b)}, s, p)
        p = apply_updates(p, u)
    return float((loss(p["x"]) - loss(x_star)) / loss(torch.zeros(5)))


def sgd(lr):
    """Plain SGD, d_t = -lr g_t (stateless but for a step counter): the optimizer of the
    published asynchronous-SGD formulas (DC-ASGD's parameter server, the lr-damping rules)."""
    from lmo.base import Optimizer, step_counter

    def init(params):
        return {"step": step_counter()}

    def update(grads, state, params=None):
        return {k: -lr * g for k, g in grads.items()}, {"step": state["step"] + 1}

    return Optimizer(init, update, name="sgd", hyper=dict(lr=lr))


def run_at_point(opt, x0, grad, steps):
    """``run`` with every gradient taken at ``lmo.gradient_point(state, x)`` (the corrector
    loop): ([x_0, ..., x_T], [z_0, ..., z_{T-1}], final state)."""
    from lmo.lookahead import gradient_point
    x, s, traj, points = dict(x0), opt.init(x0), [dict(x0)], []
    for _ in range(steps):
        z = gradient_point(s, x)
        points.append(z)
        u, s = opt.update(grad(z), s, x)
        x = apply_updates(x, u)
        traj.append(x)
    return traj, points, s


def assert_resumes_identically(opt, x0, grad, steps, split):
    """Run ``steps`` steps, and again ``split`` steps, save the state with torch.save, load it
    into ``opt.init(x0)``'s structure and continue: every later iterate must equal the
    uninterrupted run's bit for bit (gradients at ``lmo.gradient_point``, x_t for most states)."""
    import io

    from lmo.base import load_state_dict, state_dict
    from lmo.lookahead import gradient_point
    full, _, _ = run_at_point(opt, x0, grad, steps)
    half, _, s = run_at_point(opt, x0, grad, split)
    buf = io.BytesIO()
    torch.save(state_dict(s), buf)
    buf.seek(0)
    s = load_state_dict(opt.init(x0), torch.load(buf, weights_only=True))
    x = half[-1]
    for t in range(split, steps):
        u, s = opt.update(grad(gradient_point(s, x)), s, x)
        x = apply_updates(x, u)
        assert all(torch.equal(x[k], full[t + 1][k]) for k in x), t
