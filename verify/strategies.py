"""Hypothesis strategies for problem instances, noise models and hyperparameters.

Exported for users' tests::

    from verify.strategies import instances
    @given(instances())
    def test_my_bound(inst): res = inst.run(seeds=8); ...

An :class:`Instance` is a plain frozen record of small numbers (seed, sizes, kinds), so
hypothesis shrinks it to a readable minimal example and ``repr`` reproduces it.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from lmo.geometry import get_geometry
from lmo.variants import PIPEDREAM, RUN_VARIANTS as VARIANTS, SYNC

from .montecarlo import run
from .noise import make_noise
from .problems import random_cosine_sum, random_least_squares, random_psd, random_quadratic, vector_quadratic

PROBLEM_KINDS = ("vector", "quadratic", "least_squares", "cosine_sum")
GEOMETRY_OF = {"vector": ("sign", "l2"), "quadratic": ("spectral", "frobenius", "sign"),
               "least_squares": ("spectral", "frobenius"), "cosine_sum": ("spectral", "sign", "frobenius")}
NOISE_KINDS = ("gaussian", "anisotropic", "student_t", "aligned")


#: the quadratic kind's smallest distance scale: x0 -> 0 never starts at the exact minimiser
#: (where sign(0) = 0 stops every step and only noise moves the iterate)
DIST_MIN = 0.3


def quadratic_dist(x0: float) -> float:
    """X*'s entry scale for the quadratic kind: dist = max(3 x0, DIST_MIN) (x0 = 1 -> 3)."""
    return max(3.0 * float(x0), DIST_MIN)


@dataclass(frozen=True)
class Instance:
    """problem kind/geometry/size/seed/scale, noise kind/sigma, variant, lr, mu, delay, steps, x0.

    x0 sets the start's distance from the minimiser: vector kind: x_0 = x0 (1, ..., 1), x* = 0;
    quadratic kind: x_0 = 0, X* entries of size quadratic_dist(x0) (x0 = 1: 3, the former
    default); least squares and the cosine sum keep their own start (x0 unused)."""

    kind: str = "vector"
    geometry: str = "sign"
    m: int = 1
    n: int = 1
    seed: int = 0
    scale: float = 1.0
    cond: float = 1.0
    noise: str = "gaussian"
    sigma: float = 0.0
    variant: str = SYNC
    lr: float = 0.1
    mu: float = 1.0
    delay: int = 1
    steps: int = 1
    x0: float = 1.0

    def problem(self):
        g = torch.Generator().manual_seed(self.seed)
        geo = get_geometry(self.geometry)
        if self.kind == "vector":
            H = random_psd(self.n, g, self.cond, top=self.scale)
            return vector_quadratic(H, geo, x0=torch.full((1, self.n), self.x0), name=f"vector{self.n}")
        if self.kind == "quadratic":
            p = random_quadratic(self.m, self.n, geo, g, self.cond, self.cond, self.scale, quadratic_dist(self.x0))
        elif self.kind == "least_squares":
            p = random_least_squares(self.m, self.n, geo, g, scale=self.scale)
        else:
            p = random_cosine_sum(self.m, self.n, geo, g, scale=self.scale)
        return p

    def noise_model(self):
        return make_noise(self.noise, self.sigma, shape=(self.m, self.n))

    def run(self, seeds: int = 8, mc_seed: int = 0, stride: int = 1, backend: str = "auto"):
        delay = self.delay if self.variant == PIPEDREAM else None
        return run(self.problem(), self.noise_model(), self.variant, self.lr, self.mu, self.steps,
                   seeds, mc_seed, delay=delay, stride=stride, backend=backend)


def lrs(lo: float = 1e-3, hi: float = 0.3):
    """Step sizes eta, log-uniform on [lo, hi] (rounded to 3 significant digits)."""
    return st.floats(0.0, 1.0).map(lambda u: float(f"{lo * (hi / lo) ** u:.3g}"))


def mus(lo: float = 0.02):
    """Momentum weights mu in [lo, 1] (1 = no momentum)."""
    return st.floats(0.0, 1.0).map(lambda u: float(f"{1 - (1 - lo) * u:.3g}"))


def noise_models(shape=(2, 2), max_sigma: float = 2.0):
    """A noise model of ``shape`` with exact sigma."""
    return st.builds(lambda k, s: make_noise(k, s, shape=shape), st.sampled_from(NOISE_KINDS),
                     st.floats(0.0, max_sigma))


@st.composite
def instances(draw, max_dim: int = 4, max_steps: int = 40, variants=VARIANTS, kinds=PROBLEM_KINDS,
              noises=NOISE_KINDS, max_scale: float = 10.0):
    """A random Instance; sizes, steps and delay shrink towards 1, sigma towards 0."""
    kind = draw(st.sampled_from(kinds))
    geometry = draw(st.sampled_from(GEOMETRY_OF[kind]))
    m = 1 if kind == "vector" else draw(st.integers(1, max_dim))
    n = draw(st.integers(1, max_dim))
    variant = draw(st.sampled_from(variants))
    return Instance(
        kind=kind, geometry=geometry, m=m, n=n, seed=draw(st.integers(0, 20)),
        scale=float(f"{draw(st.floats(1.0, max_scale)):.3g}"),
        cond=float(f"{draw(st.floats(1.0, 100.0)):.3g}"),
        noise=draw(st.sampled_from(noises)), sigma=float(f"{draw(st.floats(0.0, 2.0)):.3g}"),
        variant=variant, lr=draw(lrs()), mu=draw(mus()),
        delay=draw(st.integers(2, 3)) if variant == PIPEDREAM else 1,
        steps=draw(st.integers(1, max_steps)), x0=float(f"{draw(st.floats(0.0, 10.0)):.3g}"))
