"""Every registered bound, derived or not, confronted with numbers: a falsification pass inside
``theory.check()`` (docs/design.md §6, step 1).

A bound ``Q <= expr`` (Q: E_t, E_x, G or G_x of docs/proof.md's symbols, the record's quantity) is
evaluated AS REGISTERED (or as a planted world overrides it) on exact runs of its own variant, and
is refuted when the measured quantity is above it with confidence: per seed the margin
M = expr(r_w of that seed) - Q (a bound is affine in r_w, r_avg, so E M = expr(E r_w) - E Q), and the
bound is refuted when the one-sided Student-t upper confidence bound of E M is below 0 at some
(instance, t), alpha = 0.01 family-wise, Bonferroni over every (instance, t) tested
(theory.checks.witnesses' mean mode; with one seed or sigma = 0 the bound is the mean itself).

The runs: the witness grid (theory.checks.witness_grid.GRID: the attaining regimes, the corners, sigma
from 0.005 to 50), ``rho_ladder`` (rho from 2 to 32 where the noise dominates) and ``search_instances``, instances drawn by a seeded generator over the domain
(mu log-uniform in [0.005, 1], sigma 0 or log-uniform in [1e-3, 1e2], rho = sqrt(d) up to 32, near
and far starts, eta, the horizon), the same draw every call.

``status(world_derivations, name, result)``: 'derived' (a derivation of the world proves it; its chain
is checked by theory.checks.chain), 'refuted', 'not refuted' (no derivation: confronted only, on the
number of instances given, so unchecked rather than valid), or 'unchecked' (no instance of its variant
at all). check() fails when a bound registered valid (or of unknown validity) is refuted.
"""
from __future__ import annotations

import functools

import numpy as np
import sympy as sp

from ..records.bound import VARIANTS
from .witness_grid import GRID, Instance
from .witnesses import witness

#: the symbol of each quantity in theory.checks.witnesses.measure
SYMBOL = {"momentum_error_y": "E_t", "momentum_error_x": "E_x", "avg_grad_norm_y": "G", "avg_grad_norm_x": "G_x"}
#: instances the seeded search draws per variant
SEARCH_PER_VARIANT = 14
SEARCH_SEED = 20261207


def as_step(name: str, expr, quantity: str):
    """The bound as a premise-like step ``Q <= expr`` that theory.checks.witnesses evaluates as written."""
    from ..proofs.derivation import Step
    return Step(f"bound {name}", sp.Symbol(SYMBOL[quantity]), "<=", sp.sympify(expr),
                "a registered bound, confronted with runs", "premise")


@functools.lru_cache(maxsize=None)
def search_instances(per_variant: int = SEARCH_PER_VARIANT, seed: int = SEARCH_SEED) -> tuple:
    """``per_variant`` instances of each variant drawn by numpy's Generator(seed) (module docstring)."""
    rng = np.random.default_rng(seed)
    out = []
    for v in VARIANTS:
        for _ in range(per_variant):
            d = int(rng.choice([1, 4, 16, 64, 256, 1024]))
            mu = float(np.exp(rng.uniform(np.log(0.005), 0.0)))
            sig = 0.0 if rng.uniform() < 0.3 else float(np.exp(rng.uniform(np.log(1e-3), np.log(1e2))))
            near = rng.uniform() < 0.35
            eta = float(rng.choice([0.01, 0.05]))
            T = int(rng.choice([10, 30, 80]))
            x0 = float(rng.choice([0.3, 0.5, T - 1.0])) * eta if near else float(rng.choice([1.0, 3.0, 100.0]))
            out.append(Instance(v, "sign", str(rng.choice(["aligned", "gaussian"])), (d if not near else 1,),
                                mu=round(mu, 4), eta=eta, sigma=round(sig, 4), T=T, x0_scale=x0,
                                seeds=1 if sig == 0 else (8 if d >= 256 else 16),
                                start="fixed" if near else "normal"))
    return tuple(out)


def rho_ladder() -> tuple:
    """rho = 2, 4, 8, 16, 32 (sign d = 4 ... 1024) where the noise terms dominate: aligned noise with
    sigma = 50, eta = 1e-4 (so L eta/mu stays far below rho sigma although L grows with d), mu = 0.005
    and 0.3, T = 4. At t = 0 the momentum error is rho sigma exactly, so a rho capped below about
    rho (1 - sqrt(mu)) is refuted there; the grid's large-rho instances have sigma = 1/2, where the
    drift L eta/mu of a d = 1024 problem (L ~ 560) hides such a cap."""
    return tuple(Instance(v, "sign", "aligned", (d,), mu=m, eta=1e-4, sigma=50.0, T=4, seeds=4)
                 for v in VARIANTS for d in (4, 16, 64, 256, 1024) for m in (0.005, 0.3))


def instances() -> tuple:
    """What a bound is confronted with: the witness grid, the rho ladder, then the seeded search."""
    return GRID + rho_ladder() + search_instances()


def confront(name: str, expr, quantity: str, variant: str, sim=None, over=None) -> dict:
    """theory.checks.witnesses.witness of ``Q <= expr`` in the mean mode on the instances of
    ``variant`` (default :func:`instances`): {"ok", "worst_margin", "failed_on", "instances", ...}."""
    return witness(as_step(name, expr, quantity), (variant,), True, instances() if over is None else over, sim)


def status(proved: bool, result: dict) -> str:
    """'derived', 'refuted', 'not refuted' or 'unchecked' (module docstring)."""
    if not result["ok"]:
        return "refuted"
    if proved:
        return "derived"
    return "not refuted" if result["instances"] else "unchecked"


def confront_all(derivations, bounds=None, sim=None, only_overridden: bool = False) -> dict:
    """{bound name: {"status", "registered_valid", "ok", "worst_margin", "failed_on", "instances"}} for
    every registered bound, its expression overridden by ``bounds`` ({name: expr}); ok is False when a
    bound registered valid (or of unknown validity) is refuted. ``only_overridden``: the bounds that
    ``bounds`` overrides only (a planted world of the mutation table: the others are the package's own,
    confronted by check() on its own world)."""
    from ..records.registry import all_bounds
    proved = {d.bound for d in derivations if d.proves}
    out = {}
    for b in all_bounds():
        if only_overridden and b.name not in (bounds or {}):
            continue
        expr = (bounds or {}).get(b.name, b.expr)
        r = confront(b.name, expr, b.quantity, b.variant, sim)
        st = status(b.name in proved, r)
        out[b.name] = {"status": st, "registered_valid": b.valid, "ok": not (st == "refuted" and b.valid is not False),
                       "worst_margin": r["worst_margin"], "failed_on": r.get("failed_on"), "instances": r["instances"]}
    return out
