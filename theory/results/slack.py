"""Slack of reading C2 against the package's sharper bounds, as a function of mu and of the
noise-to-drift ratio z = sqrt(mu) rho sigma / (L eta) (docs/design.md §5).

Stationary parts (t -> infinity, the transient dropped), in units of L eta:

    C2                     = sqrt(2 z^2 + 8) + (1-mu)/mu
    derived_delayed_lemma  = z + 1/mu                     (the sharper bound for delayed at y_t)
    derived_ef_lemma_worst = z + 2 + (1-mu)/mu            (the lemma C2 loosens by QM-AM)

slack = C2 / sharper >= 1 (theory.results.implications proves C2 >= both). `limits` checks in sympy:
z -> infinity gives sqrt(2) for both; z -> 0 gives 1 + (2 sqrt 2 - 1) mu against the delayed
lemma and (2 sqrt 2 + (1-mu)/mu) / (2 + (1-mu)/mu) against the EF worst case; against the EF
worst case the slack is exactly 1 at z = 2 (a = b: QM-AM is tight).

The slack of every inequality at its tightest instance (`tightness_table`, `tightness_markdown`:
the extremal witness of every step of every derivation and of every registered bound). A step
``lhs <= rhs`` is first split into the part it bounds and the bound: the terms of rhs that
hold a signed quantity (f(y_t), f(y_{t+1}), <grad f(y_t), lmo(m_t)>, ||grad f(y_t)||_*) move to the
left, so the descent lemma reads f(y_{t+1}) - f(y_t) - eta <grad f(y_t), lmo(m_t)> <= L eta^2/2 and
the LMO inner product <grad f(y_t), lmo(m_t)> + ||grad f(y_t)||_* <= 2 ||m_t - grad f(y_t)||_*. The
ratio is then (bounded part)/(bound), at most 1 where the step holds:

* premise steps: the largest ratio over the witness grid (theory.checks.witness_grid.GRID: the base grid
  and its corners), every seed and step t (pathwise premises), or a lower 99% Student-t confidence
  bound of the mean over the seeds at each t (expectation premises: a ratio above 1 by sampling
  noise cannot be selected); a premise r <= 0 holds with equality (0 = 0), ratio 1;
* algebra steps: an identity (==) has ratio 1; an inequality, less the terms both sides carry
  unchanged (so a shared drift cannot hide a lossy noise term), is evaluated at the analytic
  corner points (mu -> 0, mu = 1, t = 0, t -> oo, K -> oo, v = 0) and on a random sample of the
  domain, the largest lhs/rhs kept;
* citations: the cited bound's own row;
* registered bounds: the measured quantity over the bound, mean over the seeds (E_t, E_x at each t,
  G, G_x), on the grid instances of the bound's variant, with the measured r_w / r_avg.

A ratio >= TIGHT (0.95) means that step cannot lose 5% of its bound without failing on that
instance; a step below says why it is loose (LOOSE). The grid is the search: an instance that is
attained analytically is on it (x_0 = eta/2 with mu = 1 and sigma = 0 attains the telescope and the
sync theorem; x_0 = K eta with mu = 1 and sigma = 0 every theorem, up to its O(L eta) terms; sigma = 0 far from the minimiser attains the drift and the lemmas as t grows; aligned
noise at t = 0 attains the noise premise).
"""
from __future__ import annotations

import functools
import types

import numpy as np
import sympy as sp
from scipy import stats

from ..proofs.derivation import premise_id
from .limits import stationary
from ..records.registry import get
from ..records.symbols import L, eta, mu, rho, sigma
from ..checks.witness_grid import GRID
from ..checks.witnesses import applies, instance_values, is_mean, step_margin, variants_of

z = sp.Symbol("z", positive=True)
SHARPER = {"delayed at y": "derived_delayed_lemma", "EF worst case": "derived_ef_lemma_worst"}
MUS = (0.01, 0.1, 0.3, 0.5, 0.9, 1.0)
ZS = (0.0, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 100.0)


def in_units(name: str) -> sp.Expr:
    """Stationary part of bound ``name`` / (L eta) as a function of mu and z."""
    e = stationary(get(name).expr).subs(sigma, z * L * eta / (sp.sqrt(mu) * rho)) / (L * eta)
    return sp.simplify(e)


def slack_expr(against: str) -> sp.Expr:
    return sp.simplify(in_units("paper_c2_y") / in_units(SHARPER[against]))


def limits() -> dict[str, bool]:
    """The closed-form limits of the module docstring, each checked by sympy."""
    d, e = slack_expr("delayed at y"), slack_expr("EF worst case")
    q = (1 - mu) / mu
    return {
        "z->oo, vs delayed: sqrt(2)": sp.simplify(sp.limit(d, z, sp.oo) - sp.sqrt(2)) == 0,
        "z->oo, vs EF worst: sqrt(2)": sp.simplify(sp.limit(e, z, sp.oo) - sp.sqrt(2)) == 0,
        "z->0, vs delayed: 1 + (2 sqrt 2 - 1) mu": sp.simplify(
            sp.limit(d, z, 0) - (1 + (2 * sp.sqrt(2) - 1) * mu)) == 0,
        "z->0, vs EF worst: (2 sqrt 2 + q)/(2 + q)": sp.simplify(
            sp.limit(e, z, 0) - (2 * sp.sqrt(2) + q) / (2 + q)) == 0,
        "z=2, vs EF worst: exactly 1": sp.simplify(e.subs(z, 2) - 1) == 0,
    }


def slack_grid(mus=MUS, zs=ZS) -> dict:
    """{against: [[slack(mu, z) for z in zs] for mu in mus]} with the grid."""
    out = {"mu": list(mus), "z": list(zs)}
    for against in SHARPER:
        f = sp.lambdify((mu, z), slack_expr(against), "numpy")
        M, Z = np.meshgrid(np.asarray(mus, float), np.asarray(zs, float), indexing="ij")
        out[against] = np.asarray(f(M, Z), float).tolist()
    return out


def plot_slack(path, mus=MUS) -> str:
    """PNG: slack vs z (log axis) for each mu, one panel per sharper bound."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    zs = np.geomspace(1e-2, 1e2, 200)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, against in zip(axes, SHARPER):
        f = sp.lambdify((mu, z), slack_expr(against), "numpy")
        for m in mus:
            ax.plot(zs, f(m, zs), label=f"mu = {m}")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.axhline(np.sqrt(2), color="grey", linewidth=0.8, linestyle=":")
        ax.set_xscale("log")
        ax.set_xlabel("noise-to-drift ratio z = sqrt(mu) rho sigma / (L eta)")
        ax.set_title(f"C2 / {SHARPER[against]} (t -> inf)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("slack (ratio, >= 1)")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return str(path)


TIGHT = 0.95
#: ratios are compared rounded to this many digits, so that a tie at 1 (several instances attain a
#: step) does not go to whichever a last-bit difference of a sum favours
ROUND = 9
SIGNED = {"f(y_t)", "f(y_{t+1})", "<grad f(y_t), lmo(m_t)>", "||grad f(y_t)||_*"}
#: why a step or bound stays below TIGHT everywhere (its slack is part of the statement)
LOOSE = {
    "a <= sqrt(2 a^2 + 2 b^2)": "a <= sqrt(2a^2 + 2b^2) is at best a/sqrt(2a^2) = 1/sqrt(2): the reading's"
    " noise term is the QM-AM of a and b, so C2 at x keeps a factor sqrt(2) on the noise",
}


def split(step) -> tuple[sp.Expr, sp.Expr]:
    """(bounded part, bound) of ``lhs <= rhs`` (module docstring)."""
    lhs, rhs = sp.sympify(step.lhs), sp.sympify(step.rhs)
    signed = [a for a in sp.Add.make_args(rhs) if any(s.name in SIGNED for s in a.free_symbols)]
    moved = sp.Add(*signed)
    return lhs - moved, rhs - moved


def _values(expr, vals) -> np.ndarray:
    return step_margin(types.SimpleNamespace(lhs=0, rhs=expr), vals)


def _premise_ratio(step, inst, mean: bool = False) -> tuple[float, int]:
    """(largest ratio, the step t where it occurs; -1 for averages) of ``step`` on ``inst``."""
    num, den = split(step)
    vals = instance_values(inst)
    if den == 0:
        return (1.0, 0) if num == 0 or np.allclose(_values(num, vals)[np.isfinite(_values(num, vals))], 0) \
            else (np.inf, 0)
    n, d = _values(num, vals), _values(den, vals)
    if n.ndim != d.ndim:   # one side per step t (seeds, T), the other per seed (seeds,)
        n, d = (n[:, None] if n.ndim == 1 else n), (d[:, None] if d.ndim == 1 else d)
        n, d = np.broadcast_arrays(n, d)
    if mean:   # a lower 99% confidence bound of the mean: sampling noise cannot win
        R = n.shape[0]
        q = stats.t.ppf(0.99, R - 1) / np.sqrt(R) if R > 1 else 0.0
        n = n.mean(0, keepdims=True) - q * (n.std(0, ddof=1, keepdims=True) if R > 1 else 0.0)
        d = d.mean(0, keepdims=True)
    with np.errstate(all="ignore"):
        r = np.round(np.where(np.isfinite(n) & np.isfinite(d) & (d > 1e-300), n / d, -np.inf), ROUND)
    i = np.unravel_index(int(np.argmax(r)), r.shape)
    return float(r[i]), (int(i[1]) if r.ndim == 2 else -1)


def premise_witness(derivation, step) -> dict:
    """The tightest grid instance of a premise step of ``derivation`` (on its own variants, in its
    own mode: theory.checks.witnesses.variants_of, is_mean): {"ratio", "instance", "t"}."""
    best = {"ratio": -np.inf, "instance": None, "t": None}
    variants, mean = variants_of(derivation, step), is_mean(derivation, step)
    for inst in GRID:
        if not applies(variants, inst):
            continue
        r, tt = _premise_ratio(step, inst, mean)
        if r > best["ratio"]:   # ratios rounded to ROUND digits: a tie keeps the first instance of the grid
            best = {"ratio": r, "instance": inst.label, "t": tt}
    return best


#: analytic corner points of the closed-form domain (mu -> 0, mu = 1, t = 0, t, K -> oo, v = 0)
CORNER_POINTS = [dict(mu=m, t=tt, K=kk, v=0.0) for m in (1e-4, 0.5, 1.0) for tt in (0, 1, 10**4)
                 for kk in (1, 10**4)]


def _closed_points(syms, n=4000, seed=0):
    rng = np.random.default_rng(seed)
    pts = []
    for c in CORNER_POINTS:
        for scale in (1e-3, 1.0, 1e3):
            pts.append({s: c.get(s.name, scale) for s in syms})
            pts.append({s: c.get(s.name, 1.0 / scale) if s.name in ("sigma", "a") else c.get(s.name, scale)
                        for s in syms})
    for _ in range(n):
        p = {}
        for s in syms:
            if s.name == "mu":
                p[s] = float(rng.uniform(0, 1)) or 1.0
            elif s.is_integer:
                p[s] = int(rng.integers(0, 200))
            elif s.name == "v":
                p[s] = float(rng.exponential(1.0))
            else:
                p[s] = float(np.exp(rng.uniform(-6, 6)))
        pts.append(p)
    return pts


def algebra_witness(step) -> dict:
    """The tightest point of an algebra step (module docstring)."""
    if step.rel == "==":
        return {"ratio": 1.0, "instance": "an identity (every point)", "t": None}
    lhs, rhs = sp.sympify(step.lhs), sp.sympify(step.rhs)
    if step.where:
        lhs, rhs = lhs.subs(dict(step.where)), rhs.subs(dict(step.where))
    common = set(sp.Add.make_args(lhs)) & set(sp.Add.make_args(rhs))   # terms both sides carry unchanged
    lhs, rhs = lhs - sp.Add(*common), rhs - sp.Add(*common)
    syms = sorted((lhs.free_symbols | rhs.free_symbols), key=lambda s: s.name)
    f = sp.lambdify(syms, lhs / rhs, "math")
    best = {"ratio": -np.inf, "instance": None, "t": None}
    for p in _closed_points(syms):
        try:
            r = round(float(f(*[p[s] for s in syms])), ROUND)
        except (ZeroDivisionError, OverflowError, ValueError):
            continue
        if np.isfinite(r) and r > best["ratio"]:
            best = {"ratio": r, "instance": ", ".join(f"{s.name}={p[s]:.3g}" for s in syms), "t": None}
    return best


def _quantity(b, vals):
    """(measured quantity, bound) on one instance, mean over the seeds: (T,) arrays or scalars."""
    q = b.quantity
    common = {k: vals[k] for k in ("L", "eta", "mu", "rho", "sigma", "Delta_0")}
    if q.startswith("momentum_error"):
        meas = (vals["E_t"] if q.endswith("_y") else vals["E_x"]).mean(0)
        T = meas.shape[0]
        bnd = b.evaluate(**common, t=np.arange(T, dtype=float), r_w=vals["r_w"].mean(0), K=float(vals["K"]),
                         r_avg=float(vals["r_avg"].mean()))
        return meas, bnd * np.ones(T)
    meas = (vals["G"] if q.endswith("_y") else vals["G_x"]).mean()
    bnd = b.evaluate(**common, K=float(vals["K"]), r_avg=float(vals["r_avg"].mean()), t=0.0, r_w=0.0)
    return np.array([meas]), np.array([float(bnd)])


def bound_witness(b) -> dict:
    """The tightest grid instance of a registered bound (measured / bound, mean over the seeds)."""
    best = {"ratio": -np.inf, "instance": None, "t": None}
    for inst in GRID:
        if inst.variant != b.variant:
            continue
        meas, bnd = _quantity(b, instance_values(inst))
        with np.errstate(all="ignore"):   # a bound of 0 (sigma = 0 at t = 0 with no drift) measures 0
            r = np.round(np.where(bnd > 0, meas / bnd, -np.inf), ROUND)
        i = int(np.argmax(r))
        if r[i] > best["ratio"]:
            best = {"ratio": float(r[i]), "instance": inst.label, "t": i if b.quantity.startswith("momentum") else -1}
    return best


@functools.lru_cache(maxsize=None)
def _table() -> tuple:
    from ..proofs.registry import all_derivations
    from ..records.registry import all_bounds
    rows, seen = [], set()
    for d in all_derivations():
        for s in d.steps:
            if s.cites:
                w = {"ratio": None, "instance": f"as the bound {s.cites}", "t": None}
            elif s.kind == "premise":
                w = premise_witness(d, s)
            else:
                w = algebra_witness(s)
            rows.append({"row": premise_id(d, s), "kind": "citation" if s.cites else s.kind, **w})
    for b in all_bounds():
        if b.name in seen:
            continue
        seen.add(b.name)
        w = bound_witness(b)
        rows.append({"row": f"bound {b.name}" + ("" if b.valid else " (not a valid bound)"), "kind": "bound", **w})
    return tuple(rows)


def tightness_table() -> list[dict]:
    """One row per step of every derivation and per registered bound: {"row", "kind", "ratio",
    "instance", "t"} (computed once)."""
    return [dict(r) for r in _table()]


def verdict(row) -> str:
    """From the ratio alone, whatever the registration says: 'exceeded' above 1 (with 'not a valid
    bound' when the record says so, 'a registered inequality fails here' when it does not), 'tight'
    at or above TIGHT, 'loose: why' below."""
    if row["ratio"] is None:
        return "as the cited bound"
    if row["ratio"] > 1 + 1e-6:
        return "exceeded: " + ("not a valid bound" if "not a valid bound" in row["row"]
                               else "a registered inequality fails here")
    if row["ratio"] >= TIGHT:
        return "tight"
    key = row["row"] if row["kind"] == "bound" else row["row"].split(": ", 1)[-1]
    return "loose: " + LOOSE.get(key, "no grid instance or corner point attains it (best ratio shown)")


def tightness_markdown() -> str:
    """The table of docs/proof.md: step, tightest instance, ratio."""
    out = ["## Tightness: the extremal witness of every inequality", "",
           "Generated by `theory.results.slack.tightness_markdown` (a test compares it with the code)."
           " For each step (premise:"
           " over the witness grid and its corners; algebra: at the corner points and a random sample of"
           " the domain) and each registered bound (measured / bound on the grid), the instance where it"
           f" is tightest and its ratio; a ratio >= {TIGHT} means the inequality cannot lose 5% without"
           " failing there.", "", "| step | kind | tightest instance | ratio | verdict |", "|---|---|---|---|---|"]
    for r in tightness_table():
        inst = r["instance"] + (f", t={r['t']}" if r["t"] not in (None, -1) else "")
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.4f}"
        out.append(f"| `{r['row']}` | {r['kind']} | {inst} | {ratio} | {verdict(r)} |")
    return "\n".join(out) + "\n"
