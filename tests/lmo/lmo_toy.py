"""A deterministic toy problem shared by the delay-wrapper tests: f(x) = 1/2 ||A x - b||^2 per block."""
import torch


def make(seed=0, shapes=(("a", (4, 3)), ("b", (3, 3)), ("c", (5,)))):
    g = torch.Generator().manual_seed(seed)
    A = {k: torch.randn(*s, generator=g, dtype=torch.float64) for k, s in shapes}
    x0 = {k: torch.randn(*s, generator=g, dtype=torch.float64) for k, s in shapes}
    target = {k: torch.randn(*s, generator=g, dtype=torch.float64) for k, s in shapes}

    def grad(x):
        # separable smooth objective with a data-dependent curvature: g = A * (A * x - target)
        return {k: A[k] * (A[k] * x[k] - target[k]) for k in x}

    return x0, grad
