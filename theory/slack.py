"""Slack of reading C2 against the package's sharper bounds, as a function of mu and of the
noise-to-drift ratio z = sqrt(mu) rho sigma / (L eta) (docs/design.md §5).

Stationary parts (t -> infinity, the transient dropped), in units of L eta:

    C2                     = sqrt(2 z^2 + 8) + (1-mu)/mu
    derived_delayed_lemma  = z + 1/mu                     (the sharper bound for delayed at y_t)
    derived_ef_lemma_worst = z + 2 + (1-mu)/mu            (the lemma C2 loosens by QM-AM)

slack = C2 / sharper >= 1 (theory.implications proves C2 >= both). `limits` checks in sympy:
z -> infinity gives sqrt(2) for both; z -> 0 gives 1 + (2 sqrt 2 - 1) mu against the delayed
lemma and (2 sqrt 2 + (1-mu)/mu) / (2 + (1-mu)/mu) against the EF worst case; against the EF
worst case the slack is exactly 1 at z = 2 (a = b: QM-AM is tight).
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from .limits import stationary
from .registry import get
from .symbols import L, eta, mu, rho, sigma

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
