"""The falsification search's power, measured: bounds planted false on purpose (each a sympy
edit of a registered true bound; theory is never edited), searched at the quick and the full
budget (verify.adversarial.BUDGETS, every base of verify.adversarial.BASES), and the fraction
found.

``python -m verify.search_power [--budget quick|full|both] [--json]`` prints per planted bound
its kind, whether the search found it (the winner re-evaluated on fresh seeds as the search does:
``violated`` by the full check, every step Bonferroni, and re-evaluated ratio > 1) and its
re-evaluated ratio, then the power per budget.

Kinds (why each is false: ``planted()``'s ``why``; lag regime = sigma = 0 far from the
minimiser, where the momentum lags the gradient by exactly L eta (1-mu)/mu (1 - (1-mu)^t) and
the delay adds L eta, so the sync lemma at x and the delayed lemma at y are attained; noise
regime = eta small, sigma large: at mu -> 1 the momentum error is ||xi_t||_* = rho sigma with
aligned noise, at small mu it is the stationary sqrt(mu/(2-mu)) rho sigma):

* constant: a constant lowered by 20-50 %;
* index: an index slip (y_t = x_{t-1} read as x_t; a geometric sum started one term late);
* regime: a term dropped in one regime (mu < 1/2 or mu >= 1/2);
* rho_cap: rho capped at 4 in one term (false only where rho > 4: the 25-D sign base, rho = 5);
* mu: a wrong mu-dependence near 0 or near 1.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, replace

import sympy as sp

import theory

from .adversarial import BUDGETS, search_bases

KINDS = ("constant", "index", "regime", "rho_cap", "mu")


@dataclass(frozen=True)
class Planted:
    name: str
    kind: str       # one of KINDS
    base: str       # the registered true bound it is derived from
    expr: object    # the false sympy expression
    why: str        # where it is false

    def bound(self):
        """A theory Bound (the base's quantity and variant) claiming ``expr``: false on purpose."""
        b = theory.get(self.base)
        return replace(b, name=f"planted_{self.name}", expr=self.expr, symbols=(), valid=False,
                       status="derived", note=f"PLANTED FALSE from {self.base}: {self.why}")


def _symbols() -> dict:
    """name -> the sympy symbol the registered bounds use (with its assumptions)."""
    out = {}
    for b in theory.all_bounds():
        out.update({s.name: s for s in b.expr.free_symbols})
    return out


def planted() -> list[Planted]:
    """The planted false bounds (each ``why`` says on which instances it is false)."""
    s = _symbols()
    L, eta, mu, rho, sigma, t, K, D0 = (s[k] for k in ("L", "eta", "mu", "rho", "sigma", "t", "K", "Delta_0"))
    r_w = s["r_w"]
    sync = theory.get("derived_sync_lemma").expr
    dly = theory.get("derived_delayed_lemma").expr
    lag, bias, noise = L * eta * (1 - mu) / mu, L * eta / mu, sp.sqrt(mu) * rho * sigma
    trans = rho * sigma * (1 - mu) ** t
    half = sp.Rational(1, 2)
    P = Planted
    return [
        P("sync_lag_x0.7", "constant", "derived_sync_lemma", sync - lag + sp.Rational(7, 10) * lag,
          "lag regime: err_x -> L eta (1-mu)/mu, ratio -> 1/0.7"),
        P("delayed_bias_x0.6", "constant", "derived_delayed_lemma", dly - bias + sp.Rational(3, 5) * bias,
          "lag regime: err_y -> L eta/mu, ratio -> 1/0.6"),
        P("sync_noise_x0.5", "constant", "derived_sync_lemma", sync - noise + half * noise,
          "noise regime at mu -> 1: err_x = rho sigma (aligned), bound -> rho sigma / 2"),
        P("ef_worst_Leta", "constant", "derived_ef_lemma_worst",
          theory.get("derived_ef_lemma_worst").expr - L * eta,
          "EF at sigma = 0: err_y = L eta (1-mu)/mu + L r_w (the trajectory lemma, attained) and r_w"
          " reaches ~2 eta once the sign LMO's compression error saturates; 2 L eta halved to L eta"),
        P("sync_theorem_delta_x0.7", "constant", "derived_sync_theorem",
          theory.get("derived_sync_theorem").expr - sp.Rational(3, 10) * D0 / (K * eta),
          "1-D sign, sigma = 0, mu = 1, eta K = x0: the iterate walks to x* in K steps, mean |grad|"
          " = L x0 (K+1)/(2K) ~ Delta_0/(eta K) = L x0/2, so 0.7 Delta_0/(eta K) is exceeded"),
        P("delayed_y_as_x", "index", "derived_delayed_lemma", dly - bias + lag,
          "y_t = x_{t-1} read as x_t (the delay's L eta dropped): lag regime, ratio -> 1/(1-mu)"),
        P("sync_sum_from_k2", "index", "derived_sync_lemma", sync - lag + lag * (1 - mu),
          "the lag's geometric sum started at k = 2: L eta (1-mu)^2/mu; lag regime, ratio -> 1/(1-mu)"),
        P("sync_noise_dropped_mu_lt_half", "regime", "derived_sync_lemma",
          sp.Piecewise((sync - noise, mu < half), (sync, True)),
          "sqrt(mu) rho sigma dropped for mu < 1/2: noise regime at mu = 0.1, t >> 1/mu: err ->"
          " sqrt(mu/(2-mu)) rho sigma > rho sigma (1-mu)^t"),
        P("delayed_bias_dropped_mu_ge_half", "regime", "derived_delayed_lemma",
          sp.Piecewise((dly - bias, mu >= half), (dly, True)),
          "L eta/mu dropped for mu >= 1/2: lag regime at sigma = 0 gives err_y = L eta/mu > 0 = bound"),
        P("ef_rw_dropped_mu_ge_half", "regime", "derived_ef_lemma_trajectory",
          sp.Piecewise((theory.get("derived_ef_lemma_trajectory").expr - L * r_w, mu >= half),
                       (theory.get("derived_ef_lemma_trajectory").expr, True)),
          "L r_w dropped for mu >= 1/2: EF at sigma = 0 far out: err_y = L eta (1-mu)/mu + L r_w"),
        P("sync_noise_rho_cap4", "rho_cap", "derived_sync_lemma",
          sync - noise + sp.sqrt(mu) * sp.Min(rho, 4) * sigma,
          "rho capped at 4 in sqrt(mu) rho sigma: noise regime at mu -> 1 with rho = 5 (25-D sign,"
          " aligned noise): err = 5 sigma > 4 sigma"),
        P("delayed_transient_rho_cap4", "rho_cap", "derived_delayed_lemma",
          dly - trans + sp.Min(rho, 4) * sigma * (1 - mu) ** t,
          "rho capped at 4 in rho sigma (1-mu)^t: at t = 0 err_y = ||xi_0||_* = rho sigma (aligned),"
          " the bound L eta/mu + (sqrt(mu) rho + 4) sigma < 5 sigma for rho = 5, small mu and eta"),
        P("sync_noise_mu_not_sqrt", "mu", "derived_sync_lemma", sync - noise + mu * rho * sigma,
          "sqrt(mu) -> mu, wrong near 0: noise regime at mu = 0.1, t >> 1/mu: err ~ sqrt(mu/2) rho"
          " sigma > mu rho sigma"),
        P("delayed_bias_sqrt_mu", "mu", "derived_delayed_lemma", dly - bias + L * eta / sp.sqrt(mu),
          "1/mu -> 1/sqrt(mu), wrong near 0: lag regime, ratio -> 1/sqrt(mu)"),
        P("sync_noise_sqrt_mu_1mmu", "mu", "derived_sync_lemma",
          sync - noise + sp.sqrt(mu * (1 - mu)) * rho * sigma,
          "sqrt(mu) -> sqrt(mu (1-mu)), wrong near 1: noise regime at mu -> 1: err -> rho sigma,"
          " bound -> 0"),
    ]


def is_found(r: dict) -> bool:
    """Found: the winner's full check on fresh seeds says violated and its re-evaluated ratio > 1."""
    return bool(r["violated"]) and r["confirmed_ratio"] > 1.0


def power(budget: str | dict = "quick", bounds=None, bases=None, progress=None) -> dict:
    """Search every planted bound (or ``bounds``: Planted records) at ``budget`` from ``bases``
    (None: verify.adversarial.BASES); returns
    {budget, rows: [{name, kind, base, found, ratio, instance}], power: found / planted}."""
    rows = []
    for p in bounds if bounds is not None else planted():
        r = search_bases(p.bound(), budget, bases)
        rows.append(dict(name=p.name, kind=p.kind, base=p.base, found=is_found(r), ratio=r["confirmed_ratio"],
                         instance=r["instance"]))
        if progress:
            progress(f"  {p.name:34s} {p.kind:9s} found={rows[-1]['found']!s:5s} ratio={r['confirmed_ratio']:.3f}")
    return dict(budget=budget if isinstance(budget, str) else "custom", rows=rows,
                power=sum(r["found"] for r in rows) / max(len(rows), 1))


def table(results: list[dict]) -> str:
    """Markdown: one row per planted bound, one found / ratio column pair per budget."""
    head = "| planted bound | kind | " + " | ".join(f"found ({r['budget']}) | ratio ({r['budget']})" for r in results)
    lines = [head + " |", "|---|---|" + "---|---|" * len(results)]
    for i, row in enumerate(results[0]["rows"]):
        cells = " | ".join(f"{r['rows'][i]['found']} | {r['rows'][i]['ratio']:.3f}" for r in results)
        lines.append(f"| {row['name']} | {row['kind']} | {cells} |")
    lines += [""] + [f"power ({r['budget']}): {sum(x['found'] for x in r['rows'])}/{len(r['rows'])}"
                     f" = {r['power']:.0%}" for r in results]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m verify.search_power", description=(
        "Plant false bounds (constants lowered, index slips, terms dropped in one regime, rho capped,"
        " wrong mu-dependence), run the falsification search on each, print the fraction found."))
    ap.add_argument("--budget", choices=("quick", "full", "both"), default="quick")
    ap.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    ap.add_argument("--no-starts", action="store_true",
                    help="random start points alone (no attaining regimes): the search's power without that knowledge")
    a = ap.parse_args(argv)
    say = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    results = []
    for b in (("quick", "full") if a.budget == "both" else (a.budget,)):
        kw = dict(BUDGETS[b], starts=not a.no_starts)
        say(f"[search_power] budget {b}: {kw}")
        results.append(dict(power(kw, progress=say), budget=b + (" no starts" if a.no_starts else "")))
    print(json.dumps(results, indent=1) if a.json else table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
