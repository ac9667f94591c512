"""Lion and Signum against independent re-statements of their papers' equations."""
import torch
from hypothesis import given, strategies as st

from lmo.base import apply_updates
from lmo.steepest_descent import lion, signum


def lion_reference(x, grads, lr, b1, b2, wd):
    """Chen et al. 2023, Algorithm 2, written out with plain tensors."""
    m = torch.zeros_like(x)
    for g in grads:
        c = b1 * m + (1 - b1) * g
        x = x - lr * (torch.sign(c) + wd * x)
        m = b2 * m + (1 - b2) * g
    return x


@given(b1=st.floats(0.0, 0.99), b2=st.floats(0.0, 0.999), wd=st.floats(0.0, 0.3),
       seed=st.integers(0, 1000))
def test_lion_matches_paper_equations(b1, b2, wd, seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn(4, 5, generator=g, dtype=torch.float64)
    grads = [torch.randn(4, 5, generator=g, dtype=torch.float64) for _ in range(6)]
    opt = lion(0.01, betas=(b1, b2), weight_decay=wd)
    p, s = {"w": x0}, opt.init({"w": x0})
    for gr in grads:
        u, s = opt.update({"w": gr}, s, p)
        p = apply_updates(p, u)
    torch.testing.assert_close(p["w"], lion_reference(x0, grads, 0.01, b1, b2, wd))


def test_signum_steps_are_sign_of_momentum():
    opt = signum(0.1, momentum=0.5)
    p = {"w": torch.zeros(3)}
    s = opt.init(p)
    u, s = opt.update({"w": torch.tensor([1.0, -2.0, 0.0])}, s, p)
    assert torch.equal(u["w"], torch.tensor([-0.1, 0.1, 0.0]))
    u, s = opt.update({"w": torch.tensor([-3.0, 1.0, 1.0])}, s, p)
    # m = 0.5 * (0.5 g0) + 0.5 g1 = [-1.25, 0, 0.5]
    assert torch.equal(u["w"], torch.tensor([0.1, 0.0, -0.1]))
