"""Premise witnesses: each premise step's OWN sympy expressions evaluated on exact instances.

A premise step of a derivation (theory.proofs.derivation) states ``lhs <= rhs`` in abstract symbols (E_t, N_t, D_t,
r_w, G, F_{t+1}, ...). `measure` turns a run of theory.checks.witness_runs.simulate into values for
those symbols; `step_margin` lambdifies ``rhs - lhs`` of the step itself (once per step: t and
mu stay arguments, sums become loops) and evaluates it. So a mis-stated premise (say
D_t <= L r_w) is evaluated as written and fails where it is false; nothing re-implements the
premise by hand.

Instances: theory.checks.witness_grid.GRID, the base grid (mu in (0, 1] with 0.9 and 1, several
horizons, sign and spectral geometries with rho up to 4, sigma = 0 far from the minimiser, where
the lemmas are attained) and its corners (mu = 0.005, mu = 1 with sigma = 0 at the near-minimiser
start x_0 = eta/2 and at x_0 = K eta, T = 700, rho = 1 and 32). Results are keyed by premise id
('<derivation>: <step>', theory.proofs.derivation.premise_id), and so is what a premise is tested
on: its own derivation's variant unless VARIANTS_OF (keyed by id) says more, its mode by MEAN_IDS;
never a step name, which two derivations may share. Two modes (docs/design.md §5):

* pathwise: rhs - lhs >= -tol on every seed and step (the premise holds for every sample path,
  hence in expectation), worst margin reported;
* mean: the premise is about expectations. For each instance and step the seeds give
  samples M_1..M_R of rhs - lhs; the premise E M >= 0 is rejected when the one-sided Student-t
  upper confidence bound  mean + t_{R-1, 1-alpha/n} s/sqrt(R)  is below 0, alpha = 0.01
  family-wise, Bonferroni over the n (instance, step) tests of that premise. With s = 0
  (sigma = 0 runs) the bound is the mean itself. The t bound is exact for normal margins and
  approximate otherwise (docs/design.md §6, step 3; python -m verify.coverage measures t bounds).
"""
from __future__ import annotations

import functools

import numpy as np
import sympy as sp
from scipy import stats

from ..records.bound import DELAYED, EF, SYNC, VARIANTS
from ..proofs.derivation import premise_id
from ..records.symbols import K as K_SYM
from ..records.symbols import t as T_SYM
from .witness_grid import GRID, Instance
from .witness_runs import _inner, _weights, _wsum, simulate

ALPHA = 0.01
_ALL_OF = ("perturbed_lemma: split noise and drift",
           "perturbed_lemma: noise: A4 + Jensen + martingale orthogonality + A3",
           "perturbed_lemma: drift: A2 + triangle inequality + y-steps <= eta",
           "perturbed_theorem: descent lemma at the virtual iterate",
           "perturbed_theorem: LMO inner product",
           "perturbed_theorem: telescope over t < K",
           "paper_c2: a perturbation of two steps")
#: keyed by premise id ('<derivation>: <step>', unique): the variants a premise is a claim on, where
#: that is not its own derivation's variant (the variant of the bound the derivation proves). The
#: general lemma and theorem hold for any perturbed-gradient run, so on every variant; a premise of
#: the delayed bounds at x_t is also a claim about sync runs; 'at y := x the perturbation is zero'
#: is about the x-sequence taken as its own virtual sequence (r = 0 exactly as on a sync run). A
#: premise missing here is tested on its own derivation's variant: a new premise that reuses a step
#: name of another derivation cannot inherit that step's variants (lookup_keys).
VARIANTS_OF = {**{i: VARIANTS for i in _ALL_OF},
               "delayed_lemma_x: x-steps of delayed training are <= eta": (SYNC, DELAYED),
               "delayed_theorem_x: gradient at x from gradient at y": (SYNC, DELAYED),
               "delayed_lemma_x: at y := x the perturbation is zero": (SYNC,)}
#: premise ids about expectations (the mean mode of the module docstring); every other premise is
#: checked pathwise. Keyed by id for the same reason as VARIANTS_OF.
MEAN_IDS = frozenset({"perturbed_lemma: noise: A4 + Jensen + martingale orthogonality + A3",
                      "perturbed_theorem: average the lemma"})


def lookup_key(derivation, step) -> str:
    """The key under which a premise's variants and mode are looked up: its premise id."""
    return premise_id(derivation, step)


def lookup_keys(derivations=None) -> list[str]:
    """The lookup key of every premise of ``derivations`` (default: the package's), one per
    premise step, in order; a well-formed set has no key twice (a default test checks)."""
    if derivations is None:
        from ..proofs.registry import all_derivations
        derivations = all_derivations()
    return [lookup_key(d, s) for d in derivations for s in d.steps if s.kind == "premise" and not s.cites]


def own_variant(derivation) -> str:
    """The variant of the bound ``derivation`` proves (its registry record)."""
    from ..records.registry import get
    return get(derivation.bound).variant


def variants_of(derivation, step) -> tuple:
    """The variants on which the premise ``step`` of ``derivation`` is tested: VARIANTS_OF by its
    id, else its own derivation's variant."""
    return tuple(VARIANTS_OF.get(lookup_key(derivation, step), (own_variant(derivation),)))


def is_mean(derivation, step) -> bool:
    """Whether the premise is about expectations (MEAN_IDS, by id)."""
    return lookup_key(derivation, step) in MEAN_IDS


def measure(H) -> dict:
    """Values of the premises' abstract symbols on run H: arrays (seeds, T) per step, NaN where
    undefined (t + 1 quantities at the last step), or (seeds,) for averages over t < K = T - 1."""
    geo, mu, T = H["geometry"], H["mu"], H["T"]
    dn, nm = geo.dual_norm, geo.norm
    S = H["x"].shape[0]
    r = nm(H["x"] - H["y"])
    E = dn(H["m"] - H["gy"])
    N, D, RW = (np.empty((S, T)) for _ in range(3))
    for tt in range(T):
        w = _weights(tt, mu)
        N[:, tt] = dn(_wsum(w, H["xi"][:, : tt + 1]))
        D[:, tt] = dn(_wsum(w, H["gx"][:, : tt + 1]) - H["gy"][:, tt])
        RW[:, tt] = r[:, : tt + 1] @ w
    nan = np.full((S, 1), np.nan)
    fy = H["f"](H["y"])
    inner = np.stack([_inner(H["gy"][:, tt], geo.lmo(H["m"][:, tt]), geo) for tt in range(T)], 1)
    K = T - 1
    return {"E_t": E, "E_x": dn(H["m"] - H["gx"]), "N_t": N, "D_t": D, "r_w": RW, "r_avg": RW[:, :K].mean(1),
            "f(y_t)": fy, "f(y_{t+1})": np.concatenate([fy[:, 1:], nan], 1),
            "<grad f(y_t), lmo(m_t)>": inner, "||grad f(y_t)||_*": dn(H["gy"]),
            "||m_t - grad f(y_t)||_*": E, "G": dn(H["gy"][:, :K]).mean(1), "G_x": dn(H["gx"][:, :K]).mean(1),
            "(1/K) sum_t E_t": E[:, :K].mean(1),
            "||x_{t+1} - x_t||": np.concatenate([nm(H["x"][:, 1:] - H["x"][:, :-1]), nan], 1),
            "L": H["L"], "eta": H["eta"], "mu": mu, "rho": H["rho"], "sigma": H["sigma"],
            "Delta_0": H["Delta_0"], "K": K}


@functools.lru_cache(maxsize=None)
def _compiled(expr: sp.Expr):
    """lambdify of expr once; t and K stay integer arguments (sums become Python loops)."""
    syms = sorted(expr.free_symbols, key=lambda s: s.name)
    return syms, sp.lambdify(syms, expr, "numpy")


def _arg(values, s, tv):
    if s == T_SYM:
        return tv
    if s == K_SYM:
        return int(values["K"])
    v = values[s.name]
    return v[:, tv] if np.ndim(v) == 2 else v


def step_margin(step, values: dict) -> np.ndarray:
    """rhs - lhs of ``step`` evaluated on ``values`` (measure): (seeds, T) or (seeds,)."""
    expr = sp.sympify(step.rhs) - sp.sympify(step.lhs)
    syms, fn = _compiled(expr)
    per_t = T_SYM in syms or any(np.ndim(values.get(s.name, 0)) == 2 for s in syms)
    S = values["E_t"].shape[0]
    if not per_t:
        with np.errstate(all="ignore"):
            return np.asarray(fn(*[_arg(values, s, None) for s in syms]), float) * np.ones(np.shape(values["G"]))
    T = values["E_t"].shape[1]
    if not expr.has(sp.Sum):     # no sum over k: every step t at once (the same numbers as the loop below)
        try:
            with np.errstate(all="ignore"):
                out = np.asarray(fn(*[_arg_all(values, s, T) for s in syms]), float)
            return np.broadcast_to(out, (S, T)).copy()
        except (ValueError, TypeError):   # a function numpy cannot broadcast (Min of two arrays): the loop
            pass
    with np.errstate(all="ignore"):
        cols = [np.asarray(fn(*[_arg(values, s, tv) for s in syms]), float) * np.ones(S) for tv in range(T)]
    return np.stack(cols, 1)


def _arg_all(values, s, T):
    """The argument of symbol ``s`` for every step at once: t as a row 0..T-1, a per-step value as
    (seeds, T), a per-seed value as a column, a constant as is."""
    if s == T_SYM:
        return np.arange(T)[None, :]
    if s == K_SYM:
        return int(values["K"])
    v = values[s.name]
    return v if np.ndim(v) == 2 else (v[:, None] if np.ndim(v) == 1 else v)


def mean_ucb(samples: np.ndarray, n_tests: int, alpha: float = ALPHA) -> np.ndarray:
    """Upper confidence bound of E M per column: mean + t_{R-1, 1-alpha/n_tests} s/sqrt(R)."""
    R = samples.shape[0]
    mean = samples.mean(0)
    if R < 2:
        return mean
    q = stats.t.ppf(1 - alpha / n_tests, R - 1)
    return mean + q * samples.std(0, ddof=1) / np.sqrt(R)


def margin_of(step, values: dict, n_tests: int = 1, mean: bool = False) -> tuple[float, int]:
    """(worst margin, number of samples) of ``step`` on one instance (module docstring): the
    smallest rhs - lhs (pathwise) or the smallest upper confidence bound of E[rhs - lhs] (mean)."""
    m = step_margin(step, values)
    if mean:
        cols = m.reshape(m.shape[0], -1)
        cols = cols[:, np.all(np.isfinite(cols), 0)]
        return float(np.min(mean_ucb(cols, n_tests))), int(cols.size)
    m = m[np.isfinite(m)]
    return float(np.min(m)), int(m.size)


def premise_steps(derivations=None) -> list:
    """[(premise_id, step)] for every premise step (not a citation) of every derivation."""
    return [(i, s) for i, _, s in premise_entries(derivations)]


def premise_entries(derivations=None) -> list:
    """[(premise_id, derivation, step)] for every premise step (not a citation), first occurrence
    of an id kept."""
    if derivations is None:
        from ..proofs.registry import all_derivations
        derivations = all_derivations()
    seen, out = set(), []
    for d in derivations:
        for s in d.steps:
            i = premise_id(d, s)
            if s.kind == "premise" and not s.cites and i not in seen:
                seen.add(i)
                out.append((i, d, s))
    return out


@functools.lru_cache(maxsize=None)
def instance_values(inst: Instance, sim=None) -> dict:
    """measure() of the run of ``inst`` (simulated by ``sim``, default theory.checks.witness_runs.simulate)."""
    H = (sim or simulate)(inst.variant, inst.geometry, T=inst.T, seeds=inst.seeds, mu=inst.mu, eta=inst.eta,
                          sigma=inst.sigma, shape=inst.shape, seed=1, noise=inst.noise, x0_scale=inst.x0_scale,
                          start=inst.start)
    return measure(H)


def applies(variants, inst: Instance) -> bool:
    """Whether instance ``inst`` runs one of ``variants`` (variants_of gives a premise's)."""
    return inst.variant in variants


@functools.lru_cache(maxsize=None)
def witness(step, variants=VARIANTS, mean: bool = False, instances=GRID, sim=None) -> dict:
    """Worst margin of ``step`` over the instances of ``variants`` (module docstring), pathwise or,
    with ``mean``, by the one-sided t bound; stops at the first instance where the premise fails.
    witness_premise looks the variants and the mode up by the premise's id."""
    used = [i for i in instances if applies(variants, i)]
    n_tests = sum(i.T for i in used) if mean else 1
    mode = (f"mean: one-sided Student-t, family-wise {1 - ALPHA:.0%}, Bonferroni over {n_tests} tests"
            if mean else "pathwise")
    worst, n = np.inf, 0
    for k, inst in enumerate(used):
        vals = instance_values(inst, sim)
        m, c = margin_of(step, vals, n_tests, mean)
        worst, n = min(worst, m), n + c
        if m < -1e-9 * max(1.0, float(vals["L"])):
            return {"ok": False, "worst_margin": m, "failed_on": inst.label, "instances": k + 1,
                    "samples": n, "mode": mode, "variants": tuple(variants)}
    return {"ok": True, "worst_margin": float(worst), "instances": len(used), "samples": n, "mode": mode,
            "variants": tuple(variants)}


def witness_premise(derivation, step, instances=GRID, sim=None) -> dict:
    """witness of premise ``step`` of ``derivation`` on its own variants and in its own mode
    (variants_of, is_mean: looked up by its id)."""
    return witness(step, variants_of(derivation, step), is_mean(derivation, step), instances, sim)


def all_witnesses(derivations=None, sim=None) -> dict:
    """{premise_id: witness_premise(...)} for every premise of every derivation (premise_entries)."""
    return {i: witness_premise(d, s, sim=sim) for i, d, s in premise_entries(derivations)}
