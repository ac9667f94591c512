"""The certificate grid: certified worst case vs the package's derived deterministic term, its
verdict, and the section of docs/proof.md.

For every (variant, mu, t) of the grid, L = eta = 1: by homogeneity (f -> f/L, x -> x/eta) the
worst case is L eta times a function of (mu, t) (tests/theory/test_certificates.py checks this).

* certified: sqrt of the PEP's value (theory.checks.certificates.pep.solve);
* derived:   the registered lemma at sigma = 0 (relations.derived_uniform), uniform in t;
* derived_t: the derivation's bound at step t (relations.derived_finite);
* ratio = certified / derived, ratio_t = certified / derived_t (a derived value of 0 has no ratio;
  then certified must be 0 within the tolerance);
* 1-D: relations.aligned_value, an explicit instance (a lower bound on the worst case).

The check: no derived term below its certificate, ratio <= 1 + TOL everywhere (TOL: the SDP
solver's accuracy, relative; ATOL absolute), compared in squares since the PEP's value is the
squared norm: certified^2 <= (derived (1 + TOL))^2 + ATOL^2.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ...records.bound import VARIANTS
from .relations import aligned_value, derived_finite, derived_uniform

MUS = (0.05, 0.1, 0.3, 0.5, 0.9, 1.0)
TS = (0, 1, 2, 4, 8)
TOL = 1e-6
#: absolute, in units of L eta: the square root of the solver's floor on the squared value
ATOL = 1e-4
#: a ratio at least this is reported as attained
TIGHT = 0.999


@dataclass(frozen=True)
class Row:
    """One cell: the certified worst case (L = eta = 1) and the derived terms it is compared with."""

    variant: str
    mu: float
    t: int
    certified: float
    derived: float
    derived_t: float
    aligned: float
    accurate: bool = True
    gap: float = math.nan

    @property
    def ratio(self) -> float:
        """certified / derived (nan where derived = 0)."""
        return self.certified / self.derived if self.derived > 0 else math.nan

    @property
    def ratio_t(self) -> float:
        """certified / derived_t (nan where derived_t = 0)."""
        return self.certified / self.derived_t if self.derived_t > 0 else math.nan

    def holds(self, derived: float | None = None) -> bool:
        """derived (default: both derived terms) >= certified: certified^2 <= (d (1 + TOL))^2 + ATOL^2."""
        ds = (self.derived, self.derived_t) if derived is None else (derived,)
        return all(self.certified ** 2 <= (d * (1 + TOL)) ** 2 + ATOL ** 2 for d in ds)


def row(variant: str, mu: float, t: int, certified: float, accurate: bool = True, gap: float = math.nan) -> Row:
    """The row of one cell, from its certified value (gap: certified minus the value recomputed
    from the worst case's vectors, pep.recheck; a primal-dual gap of the SDP)."""
    return Row(variant, mu, t, certified, derived_uniform(variant, mu), derived_finite(variant, mu, t),
               aligned_value(variant, mu, t), accurate, gap)


def grid(mus=MUS, ts=TS, variants=VARIANTS) -> list[tuple[str, float, int]]:
    """The cells (variant, mu, t), variant-major."""
    return [(v, mu, t) for v in variants for mu in mus for t in ts]


def compute(cells=None, solver=None) -> list[Row]:
    """Solve the PEP of every cell (default: the whole grid). Needs PEPit."""
    from .pep import SOLVER, recheck, solve
    out = []
    for v, mu, t in (grid() if cells is None else cells):
        wc = solve(v, mu, t, solver=solver or SOLVER)
        out.append(row(v, mu, t, wc.certified, wc.accurate,
                       wc.certified - recheck(wc, v, mu, t)["value_from_points"]))
    return out


def stored_rows() -> list[Row]:
    """The grid's rows from the stored certified values (theory.checks.certificates.stored): no PEPit."""
    from .stored import VALUES
    return [row(v, mu, t, VALUES[(v, mu, t)]) for v, mu, t in grid()]


def verdict(rows: list[Row]) -> str:
    """One line: whether every derived term is at least its certificate, and where it is attained."""
    bad = [r for r in rows if not r.holds()]
    if bad:
        cells = ", ".join(f"{r.variant} mu={r.mu} t={r.t}" for r in bad)
        return f"VIOLATED: a derived term is below the certified worst case at {len(bad)} cells: {cells}"
    by = {v: sum(r.variant == v and r.ratio_t >= TIGHT for r in rows) for v in VARIANTS}
    out = (f"holds: no derived term below its certificate on {len(rows)} cells (tolerance {TOL:g} relative,"
           f" {ATOL:g} L eta absolute); derived_t attained (ratio_t >= {TIGHT}) at "
           + ", ".join(f"{n} {v}" for v, n in by.items()) + " cells")
    flagged = sum(not r.accurate for r in rows)
    if flagged:
        out += f"; the solver flagged {flagged} solutions as possibly inaccurate"
    gaps = [abs(r.gap) for r in rows if not math.isnan(r.gap)]
    if gaps:
        out += f"; max |certified - value of the worst case's vectors| {max(gaps):.1e}"
    return out


def findings(rows: list[Row]) -> list[str]:
    """Per variant, from the rows: where the certificate equals the 1-D instance, where derived_t
    is attained, and the range of the uniform ratio at the largest t."""
    out = []
    for v in VARIANTS:
        rs = [r for r in rows if r.variant == v]
        if not rs:
            continue
        pos = [r for r in rs if r.derived_t > 0]
        one_d = sum(abs(r.certified - r.aligned) <= 1e-4 for r in rs)
        attained = sum(r.ratio_t >= TIGHT for r in pos)
        last = [r for r in rs if r.t == max(x.t for x in rs) and r.derived > 0]
        lo, hi = min(last, key=lambda r: r.ratio), max(last, key=lambda r: r.ratio)
        out.append(f"- {v}: the certificate equals the 1-D instance at {one_d}/{len(rs)} cells; derived_t is"
                   f" attained at {attained}/{len(pos)} cells where it is positive; at t = {lo.t} the ratio"
                   f" to the uniform bound runs from {lo.ratio:.4f} (mu = {lo.mu:g}) to {hi.ratio:.4f}"
                   f" (mu = {hi.mu:g}).")
    return out


def _f(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.4f}"


def format_table(rows: list[Row]) -> str:
    """The plain-text table: variant, mu, t, certified, derived, ratio, derived_t, ratio_t, 1-D."""
    head = f"{'variant':8} {'mu':>5} {'t':>2} {'certified':>9} {'derived':>8} {'ratio':>6} " \
           f"{'derived_t':>9} {'ratio_t':>7} {'1-D':>7}"
    lines = [head] + [f"{r.variant:8} {r.mu:5.2f} {r.t:2d} {r.certified:9.4f} {r.derived:8.4f} {_f(r.ratio):>6} "
                      f"{r.derived_t:9.4f} {_f(r.ratio_t):>7} {r.aligned:7.4f}" for r in rows]
    return "\n".join(lines)


def certificates_markdown(rows: list[Row] | None = None) -> str:
    """The section 'Certified worst cases (PEPit)' of docs/proof.md, from the stored values."""
    rows = stored_rows() if rows is None else rows
    out = ["## Certified worst cases (PEPit)", "",
           "Generated by `theory.checks.certificates.table.certificates_markdown` from the stored values"
           " (`python -m theory.checks.certificates` re-solves every cell and says whether they are current;"
           " `--write` stores them). The deterministic part ($\\sigma = 0$) of the momentum-error lemma posed"
           " as a performance-estimation problem and solved exactly with PEPit, in the Euclidean case"
           " ($\\ell_2$, $\\rho = 1$: normalized SGD with momentum): $f$ $L$-smooth, not necessarily convex"
           " (exact interpolation conditions), the virtual iterate moving by free steps"
           " $\\|d_s\\|_2 \\le \\eta$, gradients at $x_j = y_j - (y_j - x_j)$ with $y_j - x_j = 0$ (sync),"
           " $d_{j-1}$ (delayed), $d_{j-1} - d_{j-2}$ (EF), and the worst case of"
           " $\\|m_t - \\nabla f(y_t)\\|_2$ ($x_t$ for sync), $m_t = \\sum_j w_{t,j}\\nabla f(x_j)$."
           " $L = \\eta = 1$: the value is $L\\eta$ times a function of $(\\mu, t)$.", "",
           "Not covered (PEPit cannot express them here): the spectral and sign geometries (non-Euclidean norms,"
           " $\\rho > 1$) and the stochastic part ($\\sigma > 0$). The certificate covers only the Euclidean"
           " deterministic drift.", "",
           "Columns: *certified* the exact worst case; *derived* the registered lemma at $\\sigma = 0$"
           " ($L\\eta(1-\\mu)/\\mu$ sync, $L\\eta/\\mu$ delayed, $L\\eta(1-\\mu)/\\mu + 2L\\eta$ EF);"
           " *derived_t* the derivation's bound at step $t$, $L\\eta(1-\\mu)(1-(1-\\mu)^t)/\\mu + cL\\eta$ with"
           " $c = 0, 1, 2$; *1-D* the explicit instance $f = Lx^2/2$ with every step $+\\eta$ (a lower bound).", "",
           "| variant | mu | t | certified | derived | ratio | derived_t | ratio_t | 1-D |",
           "|---|---|---|---|---|---|---|---|---|"]
    out += [f"| {r.variant} | {r.mu:g} | {r.t} | {r.certified:.4f} | {r.derived:.4f} | {_f(r.ratio)} |"
            f" {r.derived_t:.4f} | {_f(r.ratio_t)} | {r.aligned:.4f} |" for r in rows]
    out += ["", f"Verdict: {verdict(rows)}.", "", "Where the bounds are tight:", ""] + findings(rows)
    return "\n".join(out)
