"""The certificates as part of ``theory.check()``: what check() does not take on trust.

* replay: the point relations the PEPs are posed on (relations.points: x_j = y_j - (y_j - x_j) over
  (y_0, d_0, ..., d_{t-1}), the target y_t or x_t) and the momentum weights (relations.weights:
  m_t = sum_j w_{t,j} g_j) are replayed against a run of each variant (theory.checks.witness_runs.simulate,
  theory's own run of the recursions of docs/design.md §4; theory imports nothing of ours, so the run
  of lmo's wrappers is replayed by tests/theory/test_certificates.py against the same
  relations); relations changed together with the stored values fail here;
* re-solve: a few cells (RESOLVE) solved again with PEPit, when it is installed, and compared with the
  stored values (stored.VALUES, within the CLI's STALE_TOL);
* bound: every stored certificate against the world's lemma at sigma = 0 (the registered expression, or
  the planted override): no derived term below its certificate (table.Row.holds).

``audit(bounds=None, replay=True, resolve=True) -> {"replay", "resolve", "bound", "ok"}``; each section
is {cell or variant: bool} plus a "why" entry where one fails. Without PEPit "resolve" says so and is
not counted as a failure (the stored values are still replayed and compared with the bounds).
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from ...records.bound import VARIANTS
from . import relations
from .table import TOL, ATOL

#: the cells re-solved by check() when PEPit is installed (about a second)
RESOLVE = (("delayed", 0.5, 2), ("ef", 0.3, 4), ("ef", 0.9, 2))
#: the stored values are current when within this of a fresh solve (the CLI's STALE_TOL)
STALE_TOL = 1e-4


def replay_variant(variant: str, sim=None, mu: float = 0.3, T: int = 7) -> dict:
    """The relations against one run of ``variant`` (sign geometry, d = 3, noisy): {"points", "target",
    "weights"} each the largest deviation over t < T."""
    from ..witness_runs import simulate
    H = (sim or simulate)(variant, "sign", T=T, seeds=1, mu=mu, eta=0.1, sigma=0.5, shape=(3,), seed=3)
    xs, ys, gs, ms, ds = (H[k][0] for k in ("x", "y", "g", "m", "d"))
    dev = {"points": 0.0, "target": 0.0, "weights": 0.0}
    for t in range(T):
        X, target = relations.points(variant, t)
        basis = np.vstack([ys[:1], ds[:t]])
        want = xs[t] if variant == "sync" else ys[t]
        dev["points"] = max(dev["points"], float(np.max(np.abs(X @ basis - xs[: t + 1]))))
        dev["target"] = max(dev["target"], float(np.max(np.abs(target @ basis - want))))
        dev["weights"] = max(dev["weights"], float(np.max(np.abs(relations.weights(mu, t) @ gs[: t + 1] - ms[t]))))
    return dev


def lemma_at_zero_noise(variant: str, mu: float, bounds=None) -> float:
    """The world's lemma for ``variant`` (relations.LEMMA; overridden by ``bounds``) at sigma = 0,
    L = eta = rho = 1, t = 0 (the uniform drift the certificate is compared with)."""
    from ...records.registry import get
    name = relations.LEMMA[variant]
    e = sp.sympify((bounds or {}).get(name, get(name).expr))
    vals = {"L": 1.0, "eta": 1.0, "rho": 1.0, "sigma": 0.0, "mu": mu, "t": 0, "r_w": 0.0}
    return float(e.subs({s: vals[s.name] for s in e.free_symbols if s.name in vals}))


def bound_section(bounds=None) -> dict:
    """{'variant mu t': certified <= the world's lemma} for every stored cell (table.Row.holds)."""
    from .stored import VALUES
    out = {}
    for (v, mu, t), c in VALUES.items():
        d = lemma_at_zero_noise(v, mu, bounds)
        out[f"{v} mu={mu:g} t={t}"] = bool(c ** 2 <= (d * (1 + TOL)) ** 2 + ATOL ** 2)
    return out


def resolve_section(cells=RESOLVE) -> dict:
    """{'variant mu t': |fresh - stored| <= STALE_TOL} for ``cells``, or {"pepit": "not installed"}."""
    from .pep import require_pepit, solve
    from .stored import VALUES
    try:
        require_pepit()
    except ImportError:
        return {"pepit": "not installed"}
    return {f"{v} mu={mu:g} t={t}": bool(abs(solve(v, mu, t).certified - VALUES[(v, mu, t)]) <= STALE_TOL)
            for v, mu, t in cells}


def audit(bounds=None, replay: bool = True, resolve: bool = True, sim=None) -> dict:
    """The three sections of the module docstring and ok (every entry True; resolve without PEPit
    is reported, not failed)."""
    out = {"bound": bound_section(bounds)}
    if replay:
        out["replay"] = {v: all(x < 1e-10 for x in replay_variant(v, sim).values()) for v in VARIANTS}
    if resolve:
        out["resolve"] = resolve_section()
    flags = [x for sec in out.values() for x in sec.values() if isinstance(x, bool)]
    out["ok"] = all(flags)
    return out
