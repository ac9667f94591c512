"""Delays beyond one step, the delay correctors, and where Muon's delay penalty lives (issue 41).

Exploratory: none of these lines joins the paper's confirmatory family; each is judged by the
protocol's paired t intervals (docs/protocol.md) at the seeds it has. The theory's predicted
ordering was written down before any of these runs was trained (docs/correctors.md §1-§5), and
the protocol of this figure in §7 of that page.

Three panels, all on the main (tiny) model at the profile's horizon, seeds ``Spec.seeds``:

- gap vs tau: the sync-async gap L(delay tau) - L(sync) per seed for tau in ``Spec.taus``,
  AdamW, Muon and scion (every layer an LMO of its own norm, no AdamW group);
- the correctors: the recovered fraction 1 - gap(corrector) / gap(plain delay) at tau = 1
  (with error feedback, the paper's corrector) and tau = 4, for each optimizer of
  ``Spec.corrector_optimizers``;
- the attribution: Muon with only its matrix group delayed, only its AdamW group ("other":
  embeddings, head, norms, vectors) delayed, and both (the plain one-step delay).
"""
from __future__ import annotations

from dataclasses import dataclass

from lmo.variants import EF, SYNC, TWO_BW

from .common import spec_of, variant

NAME = "correctors"
TITLE = "Delays beyond one step, the delay correctors, and where Muon's delay penalty lives"
PLAIN = "none"


@dataclass(frozen=True)
class Spec:
    """This figure's knobs: the optimizers and delays of the gap-vs-tau panel, the correctors
    and the delays at which they are compared, the attribution's optimizer, and the seeds
    (paired by seed with the sync and one-step runs Figure 3 trains at the same seeds)."""

    tau_optimizers: tuple = ("adamw", "muon", "scion")
    taus: tuple = (1, 2, 4, 8)
    corrector_optimizers: tuple = ("muon", "adamw")
    corrector_taus: tuple = (1, 4)
    correctors: tuple = ("weight_prediction", "nesterov_lookahead", "dc_asgd_adaptive", "dc_asgd_ema",
                         "lr_damping")
    attribution_optimizer: str = "muon"
    seeds: tuple = (0, 1, 2)


SPECS = {"full": Spec(), "quick": Spec(), "gpu": Spec(seeds=(0, 1)),
         "micro": Spec(tau_optimizers=("adamw",), taus=(1, 2), corrector_optimizers=("adamw",),
                       corrector_taus=(1, 2), correctors=("weight_prediction", "lr_damping"),
                       seeds=(0, 1))}


def spec(p) -> Spec:
    """This figure's knobs in profile ``p``."""
    return spec_of(p, NAME, SPECS)


def delayed(p, o: str, tau: int, seed: int, corrector: str = PLAIN, groups: str = "all") -> dict:
    """Settings of one delayed run: Figure 3's 2BW run with only the fields that differ from it
    (tau 1, no corrector and every group delayed are Figure 3's own run, the same key)."""
    extra = dict({"tau": tau} if tau != 1 else {}, **({"corrector": corrector} if corrector != PLAIN else {}),
                 **({"delayed_groups": groups} if groups != "all" else {}))
    return variant(p, o, TWO_BW, seed=seed, **extra)


def _applies(corrector: str, tau: int) -> bool:
    """lr damping by delay (eta tau^-p) is the identity at tau = 1: the plain delay's run."""
    return not (corrector == "lr_damping" and tau == 1)


def grid(p) -> dict:
    """{(panel, optimizer, kind): [settings per seed]}, in the order the runs are worth training:
    the attribution, the gap vs tau, then the correctors. Panels: ("attr", o, sync | all |
    matrix | other), ("tau", o, sync | tau<k>), ("corr<tau>", o, none | ef | corrector)."""
    s = spec(p)
    g, a = {}, s.attribution_optimizer
    g[("attr", a, SYNC)] = [variant(p, a, SYNC, seed=x) for x in s.seeds]
    for grp in ("all", "matrix", "other"):
        g[("attr", a, grp)] = [delayed(p, a, 1, x, groups=grp) for x in s.seeds]
    for o in s.tau_optimizers:
        g[("tau", o, SYNC)] = [variant(p, o, SYNC, seed=x) for x in s.seeds]
        for tau in s.taus:
            g[("tau", o, f"tau{tau}")] = [delayed(p, o, tau, x) for x in s.seeds]
    for tau in s.corrector_taus:
        for o in s.corrector_optimizers:
            panel = f"corr{tau}"
            g[(panel, o, SYNC)] = [variant(p, o, SYNC, seed=x) for x in s.seeds]
            g[(panel, o, PLAIN)] = [delayed(p, o, tau, x) for x in s.seeds]
            if tau == 1:
                g[(panel, o, EF)] = [variant(p, o, EF, seed=x) for x in s.seeds]
            for c in s.correctors:
                if _applies(c, tau):
                    g[(panel, o, c)] = [delayed(p, o, tau, x, corrector=c) for x in s.seeds]
    return g
