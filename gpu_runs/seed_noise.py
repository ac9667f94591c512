"""Seed-to-seed noise of the delay gaps: is a measured ordering resolved, or within noise?

Cells (``orderings.cells``) that differ only in ``seed`` are replicates. For a quantity q of a cell
(``gap_2bw``, ``gap_ef``, or the EF gain ``gap_2bw - gap_ef``) and a replicate group g of n_g seeds

    mean_g = (1/n_g) sum_s q_s,        sd_g = sqrt( sum_s (q_s - mean_g)^2 / (n_g - 1) ),

pooled over one optimizer's groups

    sd_pool = sqrt( sum_g (n_g - 1) sd_g^2 / sum_g (n_g - 1) ).

An ordering compares single-seed gaps of two cells; their difference has sd sqrt(2) sd_pool, so a
pair is *resolved* when |gap_i - gap_j| > 2 sqrt(2) sd_pool (about two standard deviations), and
only resolved pairs can confirm or refute an ordering. One cell's EF gain is resolved when
|gain| > 2 sd_pool(gain). With fewer than two seeds of any cell there is no noise estimate and
nothing is reported (never a made-up one).
"""
from __future__ import annotations

import math
from itertools import combinations

QUANTITIES = ("gap_2bw", "gap_ef", "ef_gain")
Z = 2.0


def seedless(rest: tuple) -> tuple:
    return tuple(kv for kv in rest if kv[0] != "seed")


def seed_of(rest: tuple):
    return dict(rest).get("seed")


def quantity(c: dict, q: str):
    if q == "ef_gain":
        return c["gap_2bw"] - c["gap_ef"] if "gap_2bw" in c and "gap_ef" in c else None
    return c.get(q)


def mean_sd(xs: list[float]) -> tuple[float, float]:
    """(mean, sample sd with n - 1); needs len(xs) >= 2."""
    m = sum(xs) / len(xs)
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def replicates(cs: list[dict]) -> list[dict]:
    """Replicate groups (>= 2 seeds) with each quantity's values, mean and sd."""
    groups: dict = {}
    for c in cs:
        groups.setdefault((c["optimizer"], c["lr"], c["beta"], seedless(c["rest"])), []).append(c)
    out = []
    for (opt, lr, beta, _), g in sorted(groups.items(), key=lambda kv: kv[0][:3]):
        if len(g) < 2:
            continue
        stats = {}
        for q in QUANTITIES:
            vs = [v for v in (quantity(c, q) for c in g) if v is not None]
            if len(vs) >= 2:
                m, s = mean_sd(vs)
                stats[q] = dict(values=vs, mean=m, sd=s)
        out.append(dict(optimizer=opt, lr=lr, beta=beta, seeds=[seed_of(c["rest"]) for c in g], stats=stats))
    return out


def pooled_sd(reps: list[dict], optimizer: str, q: str) -> float | None:
    """sd_pool of quantity q over one optimizer's replicate groups (None without any)."""
    num = den = 0.0
    for r in reps:
        st = r["stats"].get(q)
        if r["optimizer"] == optimizer and st is not None:
            k = len(st["values"]) - 1
            num, den = num + k * st["sd"] ** 2, den + k
    return math.sqrt(num / den) if den else None


def resolved_pairs(xs: list[float], ys: list[float], sd: float, increasing: bool) -> tuple[int, int]:
    """(concordant, resolved): pairs with |y_i - y_j| > Z sqrt(2) sd, and those moving the predicted way."""
    good = tot = 0
    for (x1, y1), (x2, y2) in combinations(sorted(zip(xs, ys)), 2):
        if x1 == x2 or abs(y2 - y1) <= Z * math.sqrt(2) * sd:
            continue
        tot += 1
        good += (y2 > y1) if increasing else (y2 < y1)
    return good, tot


def annotate(reps: list[dict], lr_ord: list[dict], beta_ord: list[dict], ef_ord: list[dict]) -> None:
    """Add ``noise_sd`` and ``resolved_pairs`` to orderings 1-2 and ``gain_sd`` / ``gain_resolved`` to 3."""
    for rows, increasing in ((lr_ord, True), (beta_ord, False)):
        for o in rows:
            sd = pooled_sd(reps, o["optimizer"], "gap_2bw")
            o["noise_sd"] = sd
            o["resolved_pairs"] = None if sd is None else resolved_pairs(o["xs"], o["gaps"], sd, increasing)
    for o in ef_ord:
        sd = pooled_sd(reps, o["optimizer"], "ef_gain")
        o["gain_sd"] = sd
        o["gain_resolved"] = None if sd is None else abs(o["gap_2bw"] - o["gap_ef"]) > Z * sd


def format_noise(reps: list[dict], lr_ord: list[dict], beta_ord: list[dict], ef_ord: list[dict]) -> str:
    """The replicate table and, per ordering, how many of its pairs stand out of the seed noise."""
    if not reps:
        return "seed noise: no cell was run with two or more seeds (rerun a cell with --seed to estimate it)"
    f = lambda st: "-" if st is None else f"{st['mean']:+.4f} ± {st['sd']:.4f}"
    L = ["seed noise (cells differing only in seed; mean ± sample sd across seeds)",
         "| optimizer | lr | beta | seeds | gap 2bw | gap ef | EF gain = gap 2bw - gap ef |", "|---|---|---|---|---|---|---|"]
    for r in reps:
        st = r["stats"]
        L.append(f"| {r['optimizer']} | {r['lr']:.3g} | {r['beta']:g} | {', '.join(map(str, r['seeds']))} "
                 f"| {f(st.get('gap_2bw'))} | {f(st.get('gap_ef'))} | {f(st.get('ef_gain'))} |")
    L += ["", f"orderings against the noise (a pair is resolved when its gaps differ by > {Z:g} sqrt(2) sd_pool)",
          "| ordering | optimizer | fixed | sd_pool(gap 2bw) | resolved pairs | concordant of resolved |",
          "|---|---|---|---|---|---|"]
    for name, rows in (("1 lr", lr_ord), ("2 momentum", beta_ord)):
        for o in rows:
            (k, v), = o["fixed"].items()
            rp, sd, pairs = o.get("resolved_pairs"), o.get("noise_sd"), o["measured_pairs"][1]
            resolved = "-" if rp is None else f"{rp[1]}/{pairs}"
            concordant = "-" if rp is None else f"{rp[0]}/{rp[1]}"
            L.append(f"| {name} | {o['optimizer']} | {k}={v:.3g} | {'-' if sd is None else f'{sd:.4f}'} "
                     f"| {resolved} | {concordant} |")
    ef = [o for o in ef_ord if o.get("gain_sd") is not None]
    if ef:
        L += ["", f"ordering 3 against the noise (EF's gain is resolved when |gain| > {Z:g} sd_pool(gain))",
              "| optimizer | lr | beta | gain | sd_pool(gain) | resolved | predicted helps | measured helps |",
              "|---|---|---|---|---|---|---|---|"]
        for o in ef:
            L.append(f"| {o['optimizer']} | {o['lr']:.3g} | {o['beta']:g} | {o['gap_2bw'] - o['gap_ef']:+.4f} "
                     f"| {o['gain_sd']:.4f} | {'yes' if o['gain_resolved'] else 'no'} "
                     f"| {'yes' if o['predicted_helps'] else 'no'} | {'yes' if o['measured_helps'] else 'no'} |")
    return "\n".join(L)
