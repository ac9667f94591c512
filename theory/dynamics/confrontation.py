"""Predicted against measured growth of the delay's gap in tau (issue 48, item 4d's tool).

Written after theory.dynamics.predictions was committed and tested on synthetic input only;
the measured numbers come from the caller (the correctors figure's kept records, read by the
lead). A measured growth ratio gap(hi) / gap(lo) comes with an interval [m_lo, m_hi] (e.g. a
Fieller or bootstrap interval of the ratio of paired gaps). Per optimizer and pair:

    fits   when the predicted interval [p_lo, p_hi] meets [m_lo, m_hi]
    fails  when they are disjoint ("above": m_lo > p_hi, "below": m_hi < p_lo)

and separately whether the linear noise-floor alternative (predictions' "alternative") meets
it, so a failure of the headline mechanism says whether the model's other regime would fit;
for AdamW also whether the stall-plus-edge-oscillation interval ("combined", added to the
predictions after their first commit) meets it.
The bound's linear law (ratio hi / lo, docs/correctors.md §5) is reported beside them.
"""
from __future__ import annotations

import math

from .predictions import predictions

__all__ = ["confront", "confront_markdown"]


def _meets(a: tuple, b: tuple) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def _check_measured(name: str, pair, m) -> tuple:
    if not isinstance(pair, tuple) or len(pair) != 2 or pair[0] <= pair[1]:
        raise ValueError(f"measured[{name!r}]: a pair is (hi, lo) with hi > lo, got {pair!r}")
    if len(m) != 3:
        raise ValueError(f"measured[{name!r}][{pair}]: want (point, lo, hi), got {m!r}")
    point, lo, hi = (float(v) for v in m)
    if any(math.isnan(v) for v in (point, lo, hi)) or not lo <= point <= hi:
        raise ValueError(f"measured[{name!r}][{pair}]: need lo <= point <= hi, got {m!r}")
    return point, lo, hi


def confront(measured: dict, pred: dict | None = None) -> dict:
    """{name: {(hi, lo): row}} for every optimizer and pair in ``measured``
    ({name: {(hi, lo): (point, lo, hi)}}), row = {"predicted": (p_lo, p_hi), "point": p,
    "measured": (m, m_lo, m_hi), "verdict": "fits" | "fails", "side": None | "above" | "below",
    "alternative_fits": bool, "linear_bound": hi / lo, "linear_bound_fits": bool} and, where the
    prediction has one, "combined": (lo, hi) and "combined_fits": bool.
    ``pred``: theory.dynamics.predictions.predictions() (computed when None)."""
    pred = predictions() if pred is None else pred
    out = {}
    for name, pairs in measured.items():
        if name not in pred:
            raise ValueError(f"no prediction for optimizer {name!r} (have {sorted(pred)})")
        rows = {}
        for pair, m in pairs.items():
            point, lo, hi = _check_measured(name, pair, m)
            if pair not in pred[name]["ratios"]:
                raise ValueError(f"no prediction for pair {pair} of {name!r} (have {sorted(pred[name]['ratios'])})")
            p = pred[name]["ratios"][pair]
            fits = _meets(p, (lo, hi))
            linear = pair[0] / pair[1]
            rows[pair] = {"predicted": p, "point": pred[name]["point"][pair], "measured": (point, lo, hi),
                          "verdict": "fits" if fits else "fails",
                          "side": None if fits else ("above" if lo > p[1] else "below"),
                          "alternative_fits": _meets(pred[name]["alternative"][pair], (lo, hi)),
                          "linear_bound": linear, "linear_bound_fits": lo <= linear <= hi}
            if "combined" in pred[name]:
                rows[pair]["combined"] = pred[name]["combined"][pair]
                rows[pair]["combined_fits"] = _meets(pred[name]["combined"][pair], (lo, hi))
        out[name] = rows
    return out


def confront_markdown(result: dict) -> str:
    """One table row per optimizer and pair of a confront() result."""
    lines = ["| optimizer | ratio | predicted | measured [interval] | verdict | linear-regime alternative "
             "| bound's linear law |", "|---|---|---|---|---|---|---|"]
    for name, rows in result.items():
        for (hi, lo), r in rows.items():
            p, m = r["predicted"], r["measured"]
            word = r["verdict"] + (f" (measured {r['side']})" if r["side"] else "")
            if "combined" in r:
                c = r["combined"]
                word += f"; with the edge oscillation [{c[0]:.1f}, {c[1]:.1f}]: {'fits' if r['combined_fits'] else 'fails'}"
            lines.append(f"| {name} | gap({hi})/gap({lo}) | {r['point']:.1f} [{p[0]:.1f}, {p[1]:.1f}] | "
                         f"{m[0]:.1f} [{m[1]:.1f}, {m[2]:.1f}] | {word} | "
                         f"{'fits' if r['alternative_fits'] else 'fails'} | "
                         f"{r['linear_bound']:g}: {'fits' if r['linear_bound_fits'] else 'fails'} |")
    return "\n".join(lines)
