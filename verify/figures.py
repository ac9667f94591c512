"""Theory-vs-measurement figures: measured momentum error and gradient norm against the
bounds over steps, over eta and over mu, for sync vs delayed vs EF (PNG, matplotlib Agg).

``make_theory_figures(out_dir, quick=True) -> list[str]`` is what paper_figs reuses.
Problem: the 1-D sign quadratic far from its minimum plus a spectral 6x6 quadratic, both
with exact certified L; noise Gaussian; m_0 = g_0.
"""
from __future__ import annotations

import os

import numpy as np
import torch

from lmo.variants import DELAYED, EF, SYNC, THEORY_VARIANTS
from theory.records.registry import get

from .montecarlo import run
from .noise import Aligned
from .problems import random_quadratic

COLORS = {SYNC: "C0", DELAYED: "C1", EF: "C2"}
# theory.records.registry record names (not variant names)
LEMMA = {SYNC: "derived_sync_lemma", DELAYED: "derived_delayed_lemma", EF: "derived_ef_lemma_worst"}
THEOREM = {SYNC: "derived_sync_theorem", DELAYED: "derived_delayed_theorem", EF: "derived_ef_theorem_worst"}


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _problem():
    from lmo.geometry import Spectral
    return random_quadratic(6, 6, Spectral(), torch.Generator().manual_seed(0), cond_a=10.0, cond_b=3.0,
                            dist=3.0)


def figure_sizes(quick: bool = True) -> dict:
    """{figure: (K steps, R seeds)} of the figures' own Monte-Carlo runs (not verify.report's
    tables, which have their own K and R): stated in each figure's title and in the report."""
    return ({"over steps": (150, 32), "over eta / mu": (120, 16)} if quick
            else {"over steps": (600, 128), "over eta / mu": (400, 64)})


def figure_over_steps(out_dir, quick=True, lr=0.05, mu=0.1, sigma=0.3):
    plt = _plt()
    p, noise = _problem(), Aligned(sigma)
    K, R = figure_sizes(quick)["over steps"]
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for v in THEORY_VARIANTS:
        res = run(p, noise, v, lr, mu, K, R, stride=1)
        c = dict(res.constants)
        ax[0].plot(res.steps, res.series["err_y"].mean(1), color=COLORS[v], label=f"{v}: measured")
        ax[0].plot(res.steps, get(LEMMA[v]).evaluate(**c, t=res.steps.astype(float)) * np.ones(len(res.steps)),
                   "--", color=COLORS[v], label=f"{v}: {LEMMA[v]}")
        ax[1].semilogy(res.steps, res.series["gy"].mean(1), color=COLORS[v], label=f"{v}: ||grad f(y_t)||_*")
    tt = res.steps.astype(float)
    ax[0].plot(res.steps, get("paper_c2_y").evaluate(**c, t=tt) * np.ones(len(tt)), "k:",
               label="paper, reading C2 (delayed lemma)")
    ax[0].axhline(get("paper_delayed_noise_consistent").evaluate(**c), color="grey", ls=":", lw=0.8,
                  label="noise term alone (not a bound by itself)")
    ax[0].set(xlabel="step t", ylabel="E ||m_t - grad f(y_t)||_*", title=f"momentum error, eta={lr}, mu={mu}")
    ax[1].set(xlabel="step t", ylabel="E ||grad f(y_t)||_*", title="gradient norm (nuclear)")
    ax[0].legend(fontsize=7)
    ax[1].legend(fontsize=7)
    fig.suptitle(f"{p.name}, spectral LMO, aligned noise sigma={sigma}: K={K} steps, R={R} seeds")
    path = os.path.join(out_dir, "theory_over_steps.png")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _sweep(values, key, quick, sigma=0.3, lr=0.05, mu=0.1):
    p, noise = _problem(), Aligned(sigma)
    K, R = figure_sizes(quick)["over eta / mu"]
    out = {v: ([], [], []) for v in THEORY_VARIANTS}
    for val in values:
        kw = dict(lr=lr, mu=mu)
        kw[key] = float(val)
        for v in out:
            res = run(p, noise, v, kw["lr"], kw["mu"], K, R, stride=1)
            tail = res.series["err_y"][K // 2:].mean()
            c = dict(res.constants)
            out[v][0].append(tail)
            out[v][1].append(float(get(LEMMA[v]).evaluate(**c, t=float(K // 2))))
            out[v][2].append(float(get("paper_c2_y").evaluate(**c, t=float(K // 2))))
    return out


def figure_over(out_dir, key, values, quick=True):
    plt = _plt()
    data = _sweep(values, key, quick)
    fig, ax = plt.subplots(figsize=(6, 4))
    for v, (meas, bound, paper) in data.items():
        ax.loglog(values, meas, "o-", color=COLORS[v], label=f"{v}: measured (t >= K/2)")
        ax.loglog(values, bound, "--", color=COLORS[v], label=f"{v}: {LEMMA[v]}")
    ax.loglog(values, data[DELAYED][2], "k:", label="paper, reading C2 (delayed lemma)")
    name = {"lr": "eta", "mu": "mu"}[key]
    K, R = figure_sizes(quick)["over eta / mu"]
    ax.set(xlabel=name, ylabel="E ||m_t - grad f(y_t)||_*",
           title=f"momentum error over {name} (K={K} steps, R={R} seeds)")
    ax.legend(fontsize=7)
    path = os.path.join(out_dir, f"theory_over_{name}.png")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def make_theory_figures(out_dir, quick: bool = True) -> list[str]:
    """Write the three figures (over steps, over eta, over mu) and return their paths."""
    os.makedirs(out_dir, exist_ok=True)
    n = 4 if quick else 8
    return [figure_over_steps(out_dir, quick),
            figure_over(out_dir, "lr", np.logspace(-2.5, -0.7, n), quick),
            figure_over(out_dir, "mu", np.logspace(-2, 0, n), quick)]
