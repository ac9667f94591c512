"""Across runs: the theory's predicted orderings of the delay penalty, tested on measured gaps.

A *cell* is one (optimizer, peak lr eta, momentum beta, everything else equal) with a ``sync`` run
and a ``2bw`` and/or ``ef`` run. Measured: the final validation-loss gaps

    gap_2bw = f_val(2bw) - f_val(sync),     gap_ef = f_val(ef) - f_val(sync).

Predicted (``theory.records.registry`` at the sync run's measured constants: sigma, rho, eta = mean
step norm, mu = 1 - beta, K = steps, Delta_0 <= f(x_0) since f >= 0; L is a global constant
in the theory (A2), so within a sweep the largest median ``L_local`` of its cells is used):

    pi_2bw = B(derived_delayed_theorem) - B(derived_sync_theorem)          = 2 L eta
    pi_ef  = B(derived_ef_theorem_trajectory; r_avg) - B(derived_sync_theorem) = 2 L r_avg

with r_avg the EF run's mean measured r and r_avg / eta taken against the EF run's own mean step norm. Orderings checked (each pair of cells is concordant or not):

1. lr:  at fixed beta, gap_2bw grows with eta (pi_2bw = 2 L eta grows with eta).
2. momentum: at fixed eta, gap_2bw shrinks as beta grows. The bound's absolute price 2 L eta does
   not depend on beta; its *relative* price pi_2bw / B_sync shrinks as beta -> 1, because B_sync
   carries 2 L eta (1 - mu) / mu. That relative price is what is printed as the prediction.
3. EF: EF's bound beats the delayed bound iff r_avg / eta < 1; measured, EF helps iff gap_ef < gap_2bw.
"""
from __future__ import annotations

import statistics
from itertools import combinations

from lmo.variants import EF, SYNC, TWO_BW
from theory.records import registry

IDENTITY_FIELDS = ("optimizer", "lr", "momentum", "mode", "schedule", "ef", "out", "resume", "ckpt_every",
                   "diag_every", "diag_micro", "log_every", "device", "compile")


def rest_key(cfg: dict) -> tuple:
    """The settings a cell's runs must share besides optimizer, lr, momentum and variant."""
    return tuple(sorted((k, repr(v)) for k, v in cfg.items() if k not in IDENTITY_FIELDS))


def finite(xs) -> list:
    return [x for x in xs if x is not None and x == x]


def cells(runs: list[dict]) -> list[dict]:
    """Group run summaries (``predict.summarize``) into cells with a sync run."""
    by: dict = {}
    for r in runs:
        by.setdefault((r["optimizer"], r["lr"], r["beta"], r["rest"]), {})[r["variant"]] = r
    out = []
    for (opt, lr, beta, rest), vs in sorted(by.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        if SYNC not in vs or not ({TWO_BW, EF} & set(vs)):
            continue
        c = dict(optimizer=opt, lr=lr, beta=beta, rest=rest, runs=vs)
        s = vs[SYNC]
        for v in (TWO_BW, EF):
            if v in vs and vs[v]["final_val"] is not None and s["final_val"] is not None:
                c[f"gap_{v}"] = vs[v]["final_val"] - s["final_val"]
        c.update(predicted(s, vs.get(EF)))
        out.append(c)
    return out


def predicted(sync: dict, ef: dict | None, L: float | None = None) -> dict:
    """pi_2bw, pi_ef and pi_2bw / B_sync at the sync run's constants (``L``: override)."""
    k = sync["consts"]
    if k is None:
        return {}
    k = dict(k, L=k["L"] if L is None else L)
    b_sync = float(registry.get("derived_sync_theorem").evaluate(**k))
    out = dict(bound_sync=b_sync,
               pi_2bw=float(registry.get("derived_delayed_theorem").evaluate(**k)) - b_sync)
    out["pi_2bw_rel"] = out["pi_2bw"] / b_sync
    if ef is not None and ef["r_mean"] is not None:
        b_ef = float(registry.get("derived_ef_theorem_trajectory").evaluate(r_avg=ef["r_mean"], **k))
        eta_ef = ef["consts"]["eta"] if ef.get("consts") else k["eta"]
        out.update(pi_ef=b_ef - b_sync, r_over_eta_ef=ef["r_mean"] / eta_ef)
    return out


def concordance(points: list[tuple[float, float]], increasing: bool) -> tuple[int, int]:
    """(concordant pairs, pairs): pairs (x_i < x_j) whose y moves the predicted way (ties in y fail)."""
    good = tot = 0
    for (x1, y1), (x2, y2) in combinations(sorted(points), 2):
        if x1 == x2:
            continue
        tot += 1
        good += (y2 > y1) if increasing else (y2 < y1)
    return good, tot


def sweep_orderings(cs: list[dict], along: str) -> list[dict]:
    """Ordering 1 (``along="lr"``) or 2 (``along="beta"``) per group of cells that differ only in ``along``."""
    fixed = "beta" if along == "lr" else "lr"
    groups: dict = {}
    for c in cs:
        if "gap_2bw" in c:
            groups.setdefault((c["optimizer"], c[fixed], c["rest"]), []).append(c)
    out = []
    increasing = along == "lr"
    for (opt, fx, _), g in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if len({c[along] for c in g}) < 2:
            continue
        g = sorted(g, key=lambda c: c[along])
        Ls = [c["runs"][SYNC]["consts"]["L"] for c in g if c["runs"][SYNC].get("consts")]
        if Ls:   # one global L for the whole sweep (A2)
            g = [dict(c, **predicted(c["runs"][SYNC], c["runs"].get(EF), max(Ls))) for c in g]
        meas = concordance([(c[along], c["gap_2bw"]) for c in g], increasing)
        pkey = "pi_2bw" if along == "lr" else "pi_2bw_rel"
        pred = concordance([(c[along], c[pkey]) for c in g if pkey in c], increasing)
        out.append(dict(optimizer=opt, along=along, fixed={fixed: fx}, xs=[c[along] for c in g],
                        gaps=[c["gap_2bw"] for c in g], predicted=[c.get(pkey) for c in g],
                        measured_pairs=meas, predicted_pairs=pred,
                        holds=meas[0] == meas[1], predicted_holds=pred[0] == pred[1] and pred[1] > 0))
    return out


def ef_orderings(cs: list[dict]) -> list[dict]:
    """Ordering 3 per cell with 2bw and ef runs: does 'EF helps iff r_avg / eta < 1' agree with the gaps?"""
    out = []
    for c in cs:
        if "gap_2bw" in c and "gap_ef" in c and "r_over_eta_ef" in c:
            pred = c["r_over_eta_ef"] < 1
            meas = c["gap_ef"] < c["gap_2bw"]
            out.append(dict(optimizer=c["optimizer"], lr=c["lr"], beta=c["beta"], r_over_eta_ef=c["r_over_eta_ef"],
                            gap_2bw=c["gap_2bw"], gap_ef=c["gap_ef"], predicted_helps=pred, measured_helps=meas,
                            agree=pred == meas))
    return out


def format_report(cs: list[dict], lr_ord: list[dict], beta_ord: list[dict], ef_ord: list[dict]) -> str:
    """The three tables as text (markdown-friendly pipes)."""
    L = ["cells (gap = final val loss - sync's; pi = the bound's predicted price)",
         "| optimizer | lr | beta | seed | gap 2bw | gap ef | pi_2bw = 2 L eta | pi_2bw / B_sync | r/eta (ef) |",
         "|---|---|---|---|---|---|---|---|---|"]
    f = lambda v, s="{:+.4f}": "-" if v is None else s.format(v)
    for c in cs:
        seed = dict(c["rest"]).get("seed", "-")
        L.append(f"| {c['optimizer']} | {c['lr']:.3g} | {c['beta']:g} | {seed} | {f(c.get('gap_2bw'))} | {f(c.get('gap_ef'))} "
                 f"| {f(c.get('pi_2bw'), '{:.3g}')} | {f(c.get('pi_2bw_rel'), '{:.3f}')} "
                 f"| {f(c.get('r_over_eta_ef'), '{:.2f}')} |")
    for title, rows in (("ordering 1: the delay penalty grows with lr", lr_ord),
                        ("ordering 2: higher momentum shrinks the gap", beta_ord)):
        L += ["", title, "| optimizer | fixed | swept | measured gaps | concordant pairs | holds | predicted holds |",
              "|---|---|---|---|---|---|---|"]
        for o in rows:
            (k, v), = o["fixed"].items()
            L.append(f"| {o['optimizer']} | {k}={v:.3g} | {', '.join(f'{x:.3g}' for x in o['xs'])} "
                     f"| {', '.join(f'{g:+.4f}' for g in o['gaps'])} | {o['measured_pairs'][0]}/{o['measured_pairs'][1]} "
                     f"| {'yes' if o['holds'] else 'NO'} | {'yes' if o['predicted_holds'] else 'no'} |")
        if not rows:
            L.append("| (no cells differ only in this setting) | | | | | | |")
    L += ["", "ordering 3: EF helps where r_avg / eta < 1",
          "| optimizer | lr | beta | r/eta (ef) | gap 2bw | gap ef | predicted helps | measured helps | agree |",
          "|---|---|---|---|---|---|---|---|---|"]
    for o in ef_ord:
        L.append(f"| {o['optimizer']} | {o['lr']:.3g} | {o['beta']:g} | {o['r_over_eta_ef']:.2f} | {o['gap_2bw']:+.4f} "
                 f"| {o['gap_ef']:+.4f} | {'yes' if o['predicted_helps'] else 'no'} "
                 f"| {'yes' if o['measured_helps'] else 'no'} | {'yes' if o['agree'] else 'NO'} |")
    if ef_ord:
        agree = sum(o["agree"] for o in ef_ord)
        L.append(f"agreement: {agree}/{len(ef_ord)} cells")
    return "\n".join(L)


def median_or_none(xs):
    xs = finite(xs)
    return statistics.median(xs) if xs else None
