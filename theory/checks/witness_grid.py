"""The grid of exact instances on which theory.checks.witnesses evaluates every premise step.

One point of the parameter domain cannot witness a premise: a premise that is false only near
mu = 1 (the small-mu approximation sqrt(mu/2) of sqrt(mu/(2-mu))), only for rho > 5/2 (a capped
A4 constant) or only far from the minimiser with sigma = 0 (where the momentum lag is attained)
passes there. The grid covers the domain (docs/design.md §5):

* ``base``:      sync / delayed / EF x sign (l_inf, d = 6) / spectral (4 x 3) x the three noises
                 (gaussian, anisotropic, aligned) at mu = 1/4, eta = 0.05, sigma = 0.5, T = 30;
* ``mu``:        mu in {0.05, 0.1, 0.5, 0.9, 1} (mu = 1: no momentum), each variant, sign d = 6
                 with aligned noise (A4 tight: ||xi||_1 = rho ||xi||_2) and spectral 4 x 3 with
                 gaussian noise;
* ``rho > 3``:   sign d = 16 (rho = 4) and spectral 10 x 12 (rho = sqrt(10)), aligned noise, at
                 mu = 1/4 and 0.9; sign d = 16 with gaussian noise at mu = 1/4;
* ``horizon``:   T = 80 at mu = 0.05 (the lag (1-mu)(1-(1-mu)^t)/mu still growing);
* ``attaining``: sigma = 0, f = a x^2/2 on one coordinate (sign geometry), x_0 = 100 z, eta = 0.01,
                 T = 80, mu in {0.1, 0.5, 1}: far from the minimiser the momentum error at y_t
                 tends to L eta (1-mu)/mu + L r exactly (the derived lemmas are attained), and
                 the same with spectral 4 x 3 and sigma = 0.

The corners of the domain (``CORNERS``; the premises are walked over ``GRID = INSTANCES +
CORNERS``), where a constant or a term can be lost on the base grid without a premise failing:

* ``mu -> 0``:   mu = 0.005 (aligned noise, the transient ~ rho sigma for every t of the run) and
                 mu = 0.01 with sigma = 0 far from the minimiser, T = 200 (the lag ~ t still growing);
* ``mu = 1``, ``sigma = 0``, near-minimiser: x_0 = eta/2 on one coordinate (start "fixed"): the
                 iterate oscillates between +-eta/2, the telescope is attained (ratio 1/(1 + 1/(4K)));
                 x_0 = 0.3 eta at mu = 1/2 (alternating signs with momentum); x_0 = K eta at mu = 1
                 (T = 300: the run reaches the minimiser at t = K, so every theorem is attained up to
                 its O(L eta) terms against Delta_0/(eta K) = L K eta/2: ratio (K+1)/(K+1+c));
* near-minimiser with noise: x_0 = 0.01 z, sigma = 0.5, mu = 1/2;
* large t:       T = 700 at mu = 0.01, sigma = 0, far start, sync and delayed (the lag
                 (1-mu)(1-(1-mu)^t)/mu at its limit, (1-mu)^t ~ 9e-4: Kovalev's lemma and the paper's
                 readings reach their extremal ratio there); t = 0 is in every run;
* rho:           rho = 1 (spectral 1 x 16) up to Muon size: sign d = 1024 (rho = 32) at mu = 1/4 and 1
                 (T = 80: the noise flips a sign every step, EF's r_t = 2 eta from t = 2 on),
                 spectral 64 x 256 (rho = 8, a 1:4 layer shape). Spectral rho = 32 needs a 1024 x 1024
                 layer: ``SLOW_CORNERS`` (about a minute; a slow test walks it).

The sigma sweep (``SIGMA_SWEEP``): sigma in {0.005, 0.05, 5, 50} (sign d = 6, aligned noise, every
variant) and sigma = 50 at mu = 0.05 (spectral 4 x 3), so that with 0 and 0.5 the grid spans sigma
over four orders of magnitude and more: an error that only shows at large or small noise (a noise
capped at sigma <= 1, sqrt(sigma) for sigma) fails there.

An instance is a plain tuple (variant, geometry, noise, shape, mu, eta, sigma, T, x0_scale,
seeds, start); ``inst[2]`` is its noise model.
"""
from __future__ import annotations

from typing import NamedTuple

from ..records.bound import DELAYED, SYNC, VARIANTS

NOISES = ("gaussian", "anisotropic", "aligned")


class Instance(NamedTuple):
    variant: str
    geometry: str
    noise: str
    shape: tuple = (6,)
    mu: float = 0.25
    eta: float = 0.05
    sigma: float = 0.5
    T: int = 30
    x0_scale: float = 3.0
    seeds: int = 32
    start: str = "normal"

    @property
    def label(self) -> str:
        """e.g. 'delayed/sign6/aligned mu=0.9 eta=0.05 sigma=0.5 T=30'."""
        shp = "x".join(str(s) for s in self.shape)
        return (f"{self.variant}/{self.geometry}{shp}/{self.noise} mu={self.mu:g} eta={self.eta:g}"
                f" sigma={self.sigma:g} T={self.T}" + (f" x0={self.x0_scale:g}" if self.x0_scale != 3.0 else "")
                + (f" start={self.start}" if self.start != "normal" else ""))


def _base():
    return [Instance(v, g, nz, (6,) if g == "sign" else (4, 3), seeds=48)
            for v in VARIANTS for g in ("sign", "spectral") for nz in NOISES]


def _mu_sweep():
    return [Instance(v, g, nz, shp, mu=m)
            for m in (0.05, 0.1, 0.5, 0.9, 1.0) for v in VARIANTS
            for g, nz, shp in (("sign", "aligned", (6,)), ("spectral", "gaussian", (4, 3)))]


def _large_rho():
    out = [Instance(v, g, "aligned", shp, mu=m, T=20)
           for m in (0.25, 0.9) for v in VARIANTS for g, shp in (("sign", (16,)), ("spectral", (10, 12)))]
    return out + [Instance(v, "sign", "gaussian", (16,), T=20) for v in VARIANTS]


def _horizon():
    return [Instance(v, "sign", "gaussian", (6,), mu=0.05, T=80) for v in VARIANTS]


def _attaining():
    one_d = [Instance(v, "sign", "gaussian", (1,), mu=m, eta=0.01, sigma=0.0, T=80, x0_scale=100.0, seeds=2)
             for m in (0.1, 0.5, 1.0) for v in VARIANTS]
    return one_d + [Instance(v, "spectral", "gaussian", (4, 3), mu=0.1, eta=0.01, sigma=0.0, T=80,
                             x0_scale=100.0, seeds=2) for v in VARIANTS]


def _corners():
    far = dict(eta=0.01, sigma=0.0, x0_scale=100.0, seeds=1)
    near = dict(eta=0.01, sigma=0.0, seeds=1, start="fixed")
    out = [Instance(v, "sign", "aligned", (6,), mu=0.005) for v in VARIANTS]                      # mu -> 0
    out += [Instance(v, "sign", "gaussian", (1,), mu=0.01, T=200, **far) for v in VARIANTS]
    out += [Instance(v, "sign", "gaussian", (1,), mu=1.0, T=80, x0_scale=0.005, **near) for v in VARIANTS]
    out += [Instance(v, "sign", "gaussian", (1,), mu=0.5, T=80, x0_scale=0.003, **near) for v in VARIANTS]
    out += [Instance(v, "sign", "gaussian", (1,), mu=1.0, T=300, x0_scale=2.99, **near) for v in VARIANTS]  # x0 = K eta
    out += [Instance(v, "sign", "aligned", (6,), mu=0.5, x0_scale=0.01) for v in VARIANTS]       # near, noisy
    out += [Instance(v, "sign", "gaussian", (1,), mu=0.01, T=700, **far) for v in (SYNC, DELAYED)]  # large t
    out += [Instance(v, "spectral", "aligned", (1, 16)) for v in VARIANTS]                          # rho = 1
    out += [Instance(v, "sign", "aligned", (1024,), mu=m, T=t_, seeds=16) for m, t_ in ((0.25, 20), (1.0, 80))
            for v in VARIANTS]
    return out + [Instance(v, "spectral", "aligned", (64, 256), mu=0.9, T=10, seeds=3) for v in VARIANTS]


#: sigma over five orders of magnitude (the rest of the grid has sigma in {0, 0.5} only, where a
#: sigma-scaling error, sqrt(sigma) for sigma or a noise capped at sigma <= 1, is not seen): sign
#: d = 6 with aligned noise at t = 0 attains the noise premise at every sigma
SIGMAS = (0.005, 0.05, 5.0, 50.0)


def _sigma_sweep():
    out = [Instance(v, "sign", "aligned", (6,), sigma=s_, T=20, seeds=16) for s_ in SIGMAS for v in VARIANTS]
    return out + [Instance(v, "spectral", "gaussian", (4, 3), mu=0.05, eta=0.01, sigma=50.0, T=20, seeds=16)
                  for v in VARIANTS]


#: the base grid, in the order the witnesses walk it (base first)
INSTANCES = tuple(_base() + _mu_sweep() + _large_rho() + _horizon() + _attaining())
#: the corners of the domain (module docstring)
CORNERS = tuple(_corners())
#: sigma from 0.005 to 50 (SIGMAS)
SIGMA_SWEEP = tuple(_sigma_sweep())
#: what the premise witnesses walk: the base grid, then the corners, then the sigma sweep
GRID = INSTANCES + CORNERS + SIGMA_SWEEP
#: spectral rho = 32 (a 1024 x 1024 layer): too slow for the default checks, walked by a slow test
SLOW_CORNERS = tuple(Instance(v, "spectral", "aligned", (1024, 1024), mu=0.25, T=3, seeds=2) for v in VARIANTS)


def rho_of(inst: Instance) -> float:
    """A4's constant of the instance: sqrt(d) (sign), sqrt(min(m, n)) (spectral)."""
    import math
    return math.sqrt(inst.shape[0]) if inst.geometry == "sign" else math.sqrt(min(inst.shape))


def coverage(grid=None) -> dict:
    """What the grid spans (default :data:`GRID`): mu values, horizons, rho values, sigma
    values, geometries, starts."""
    grid = GRID if grid is None else grid
    return {"instances": len(grid),
            "mu": sorted({i.mu for i in grid}), "T": sorted({i.T for i in grid}),
            "rho": sorted({round(rho_of(i), 4) for i in grid}),
            "sigma": sorted({i.sigma for i in grid}),
            "geometries": sorted({f"{i.geometry}{'x'.join(map(str, i.shape))}" for i in grid}),
            "x0": sorted({(i.start, i.x0_scale) for i in grid})}
