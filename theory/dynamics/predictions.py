"""What theory.dynamics predicts for the correctors figure's tau sweep (issue 48, item 4c).

Written and committed before the kept tau > 1 records were read; every number is computed
here from theory.dynamics.stability and theory.dynamics.lmo_oscillation, from the optimizers'
preset momenta (``FAMILIES``) and, for AdamW's one free parameter, from tau <= 1 measurements
only (``TAU1_INPUTS``). docs/tau_law.md states the derivations and prints the table
(``markdown_table``). The gap is gap(tau) = L(delay tau) - L(sync), final validation loss;
a growth ratio is gap(hi) / gap(lo). Notation: docs/design.md §3-§4 (mu = 1 - beta).

Three mechanisms, each tied to the optimizer whose step it describes:

- **LMO relay cycle** (Muon's matrices, every group of scion): fixed-norm steps cannot
  diverge; each direction settles in the delay's limit cycle, excess h eta^2 G(tau), G from
  ``lmo_oscillation.lmo_gap`` at the optimizer's mu and Nesterov flag. No free parameter:
  h and eta cancel in a ratio. The bracket is the simulated model and its describing function.
- **Linear noise floor** (any method below its edge, and an LMO whose direction is
  noise-dominated, where E sign(m) is linear in E m): gap = eta sigma^2 k (S_tau(k) - S_0(k)) / 2
  (``stability.noise_floor``), with k = eta h_eff free in (0, k_c(8)): ratios from the
  k -> 0 limit (the bound's linear law, 4 for 4/1 and 8/2) up to infinity at the edge.
- **Adaptive stall** (AdamW): the preconditioned step k = eta h / sqrt(v) of the sharpest
  directions cannot stay above the delayed edge k_c(tau): the oscillation inflates v until
  k = k_c(tau) (self-stabilisation), which divides every direction's effective lr by
  K / k_c(tau) (K: the sharpest k the sync run holds, below its edge 2 (1 + beta) / mu = 38).
  The gap is then the synchronous run's loss at the lr s(tau) eta, s = min(1, k_c(tau) / K),
  minus its loss at eta. K is fitted on the tau = 1 gap alone; the synchronous loss-vs-lr curve
  between its measured points 0.5 / 1 / 2 x is extrapolated to s < 0.5 two ways (linear in
  log lr: the lower end; a power law L_inf + c lr^-p: the upper end).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from . import lmo_oscillation, stability

__all__ = ["Family", "FAMILIES", "TAUS", "PAIRS", "TAU1_INPUTS", "edges", "unstable_lr", "relay_ratios",
           "linear_ratios", "adamw_fit", "stall_ratios", "head_gain_ratio", "edge_oscillation_ratios", "NOISE_LEVELS",
           "relay_noise_ratios", "noise_table", "predicted_gaps", "predictions", "markdown_table",
           "edges_table"]


@dataclass(frozen=True)
class Family:
    """An optimizer's momentum as the model sees it: mu (= 1 - the preset momentum), whether
    the step applies Nesterov's u_t = mu g_t + beta m_t, and which mechanism its step follows."""

    mu: float
    nesterov: bool
    mechanism: str   # "relay" (fixed-norm LMO step) or "stall" (adaptive, AdamW)


#: lmo.presets.DEFAULT_MOMENTUM (0.9 AdamW, 0.95 Muon and scion), lmo.muon / lmo.scion's
#: nesterov=True, lmo.adamw without Nesterov (tests/theory/test_dynamics_predictions.py checks them)
FAMILIES = {"adamw": Family(0.1, False, "stall"), "muon": Family(0.05, True, "relay"),
            "scion": Family(0.05, True, "relay")}
TAUS = (1, 2, 4, 8)
PAIRS = ((4, 1), (8, 2), (2, 1), (8, 4), (8, 1))

#: tau <= 1 measurements the stall model is fitted on (docs/correctors.md §3 and §5: tiny model,
#: 1500 steps): AdamW's synchronous final loss at 0.5 / 1 / 2 x its preset lr (seed 0), and its
#: one-step (2BW) gap at the preset lr, mean of seeds 0-3 (sync 1.4437, 2BW 1.5189)
TAU1_INPUTS = {"adamw_sync_lr_curve": {0.5: 1.5469, 1.0: 1.4521, 2.0: 1.4100},
               "adamw_gap_tau1": 1.5189 - 1.4437,
               # Muon's one-step gap, same runs and source (docs/correctors.md §3: sync 1.3554, 2BW 1.3731)
               "muon_gap_tau1": 1.3731 - 1.3554}

#: head steps per entry at the presets: scion's sign head lr * radius / d_model (lmo.scion's
#: head_radius 60, lmo.presets lr 0.02, the tiny model's d_model 128) against Muon's AdamW group
#: (lmo.presets lr 1e-3, an Adam step of about lr per entry)
HEAD_STEPS = {"scion": 0.02 * 60.0 / 128.0, "muon": 1e-3}


@lru_cache(maxsize=None)
def edges(name: str) -> dict:
    """{tau: k_c(tau, mu)} for tau = 0 and TAUS: the largest stable eta h (eta h / sqrt(v) for
    AdamW) of the optimizer's momentum under a tau-step delay (stability.critical_step)."""
    f = FAMILIES[name]
    return {tau: stability.critical_step(tau, f.mu, f.nesterov) for tau in (0,) + TAUS}


def unstable_lr(name: str, ref_tau: int) -> dict:
    """{tau: lr_c(tau) / lr_c(ref_tau)} = k_c(tau) / k_c(ref_tau): the lr at which delay tau turns
    unstable, in units of the lr at which ref_tau does (the curvature cancels)."""
    e = edges(name)
    return {tau: e[tau] / e[ref_tau] for tau in (0,) + TAUS}


@lru_cache(maxsize=None)
def _relay_gaps(name: str, method: str) -> dict:
    f = FAMILIES[name]
    return {tau: lmo_oscillation.lmo_gap(tau, f.mu, f.nesterov, method) for tau in TAUS}


def relay_ratios(name: str) -> dict:
    """{(hi, lo): (simulated, describing function)} growth ratios of the LMO relay cycle's gap."""
    s, d = _relay_gaps(name, "simulated"), _relay_gaps(name, "df")
    return {(hi, lo): (s[hi] / s[lo], d[hi] / d[lo]) for hi, lo in PAIRS}


def linear_ratios(name: str, frac: float) -> dict:
    """{(hi, lo): ratio} of the linear noise floor's gap at k = frac * k_c(8) (0 < frac < 1)."""
    f = FAMILIES[name]
    k = frac * edges(name)[8]
    floor = {tau: k * stability.noise_floor(k, tau, f.mu, f.nesterov) for tau in (0,) + TAUS}
    return {(hi, lo): (floor[hi] - floor[0]) / (floor[lo] - floor[0]) for hi, lo in PAIRS}


def _loglinear(curve: dict):
    """L(s) for s = lr / preset: through the measured points, linear in log2 lr between them and
    below the lowest one with the slope of the lowest segment."""
    xs = sorted(curve)
    slope = (curve[xs[0]] - curve[xs[1]]) / math.log2(xs[1] / xs[0])

    def L(s):
        if s <= xs[0]:
            return curve[xs[0]] + slope * math.log2(xs[0] / s)
        for a, b in zip(xs, xs[1:]):
            if s <= b:
                return curve[a] + (curve[b] - curve[a]) * math.log2(s / a) / math.log2(b / a)
        raise ValueError(f"s = {s} above the measured curve")
    return L


def _power(curve: dict):
    """L(s) = L_inf + c s^-p through three measured points at s, 2 s, 4 s (exactly)."""
    a, b, c3 = sorted(curve)
    if not (math.isclose(b, 2 * a) and math.isclose(c3, 2 * b)):
        raise ValueError("the power law needs points at s, 2 s, 4 s")
    d1, d2 = curve[a] - curve[b], curve[b] - curve[c3]
    p = math.log2(d1 / d2)
    c = d2 / (b ** -p - c3 ** -p)
    inf = curve[c3] - c * c3 ** -p
    return lambda s: inf + c * s ** -p


def _solve(L, target: float) -> float:
    """s in (0, 1] with L(s) - L(1) = target (L decreasing): bisection in log s."""
    lo, hi = 1e-6, 1.0
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if L(mid) - L(1.0) > target else (lo, mid)
    return math.sqrt(lo * hi)


def adamw_fit(extrapolation: str) -> dict:
    """The stall model fitted on tau = 1: s_1 from L(s_1) - L(1) = gap(1), K = k_c(1) / s_1, and
    the predicted gaps gap(tau) = L(s(tau)) - L(1), s(tau) = min(1, k_c(tau) / K).
    extrapolation: "loglinear" or "power" (module docstring)."""
    curve = TAU1_INPUTS["adamw_sync_lr_curve"]
    L = {"loglinear": _loglinear, "power": _power}[extrapolation](curve)
    e = edges("adamw")
    s1 = _solve(L, TAU1_INPUTS["adamw_gap_tau1"])
    K = e[1] / s1
    s = {tau: min(1.0, e[tau] / K) for tau in TAUS}
    return {"s1": s1, "K": K, "sync_capped": K > e[0], "s": s,
            "gaps": {tau: L(s[tau]) - L(1.0) for tau in TAUS}}


def stall_ratios() -> dict:
    """{(hi, lo): (log-linear, power law)} AdamW's growth ratios under the stall model."""
    g = {x: adamw_fit(x)["gaps"] for x in ("loglinear", "power")}
    return {(hi, lo): (g["loglinear"][hi] / g["loglinear"][lo], g["power"][hi] / g["power"][lo])
            for hi, lo in PAIRS}


def predicted_gaps(name: str) -> dict:
    """{tau: (lo, hi)} absolute gaps in nats, scaled from the measured tau = 1 gap (TAU1_INPUTS):
    adamw by the stall model's two extrapolations, muon by the relay ratios gap(tau) / gap(1).
    None for an optimizer without a tau = 1 input (scion)."""
    if name == "adamw":
        g = [adamw_fit(x)["gaps"] for x in ("loglinear", "power")]
        return {tau: (min(a[tau], b[tau]), max(a[tau], b[tau])) for tau in TAUS for a, b in [g]}
    key = f"{name}_gap_tau1"
    if key not in TAU1_INPUTS:
        return None
    s, d = _relay_gaps(name, "simulated"), _relay_gaps(name, "df")
    g1 = TAU1_INPUTS[key]
    return {tau: tuple(sorted((g1 * s[tau] / s[1], g1 * d[tau] / d[1]))) for tau in TAUS}


def edge_oscillation_ratios(name: str = "adamw") -> dict:
    """{(hi, lo): (k_c(lo) / k_c(hi))^2}: the growth of a sharp direction's own excess past the
    edge, h eta^2 / (2 k_c(tau)^2) (theory.dynamics.adaptive_edge; its K -> infinity limit, no
    free parameter). Added after this module's first commit (9ded5e9), before any kept tau > 1
    record was read: the stall model left out the sharp direction's own oscillation."""
    e = edges(name)
    return {(hi, lo): (e[lo] / e[hi]) ** 2 for hi, lo in PAIRS}


#: gradient-noise levels sigma / (h eta) of relay_noise_ratios: from the noiseless relay to a
#: direction whose noise is 100 x the gradient a step away from the minimum
NOISE_LEVELS = (0.0, 1.0, 3.0, 10.0, 30.0, 100.0)


@lru_cache(maxsize=None)
def relay_noise_ratios(name: str, levels=NOISE_LEVELS) -> dict:
    """{level: {(hi, lo): ratio}}: the relay's growth ratios with gradient noise of sd level x h eta
    (lmo_oscillation.noisy_gaps). Added after this module's first commit (9ded5e9), before any
    kept tau > 1 record was read: how far the noiseless relay's ratios move with noise."""
    f = FAMILIES[name]
    out = {}
    for level in levels:
        g = lmo_oscillation.noisy_gaps(f.mu, f.nesterov, level)
        out[level] = {(hi, lo): g[hi] / g[lo] for hi, lo in PAIRS}
    return out


def noise_table(name: str = "muon", levels=NOISE_LEVELS) -> str:
    """relay_noise_ratios as docs/tau_law.md prints them."""
    r = relay_noise_ratios(name, levels)
    lines = ["| sigma / (h eta) | " + " | ".join(f"gap({hi})/gap({lo})" for hi, lo in PAIRS) + " |",
             "|" + "---|" * (len(PAIRS) + 1)]
    lines += [f"| {lv:g} | " + " | ".join(f"{r[lv][q]:.1f}" for q in PAIRS) + " |" for lv in levels]
    return "\n".join(lines)


def head_gain_ratio() -> float:
    """How much larger scion's head's linearised step k_eff is than Muon's (AdamW group) at the
    presets, gradients noise-dominated (noise sd sigma per entry): a sign step of the momentum
    m has E sign(m) ~ sqrt(2 / pi) E m / sd(m), sd(m) = sigma sqrt(mu / (2 - mu)) in the
    stationary EMA; Adam's m / sqrt(v) has gain 1 / sigma. Ratio of k_eff = eta h x gain:
    (eta_scion / eta_adamw) sqrt(2 / pi) / sqrt(mu / (2 - mu))."""
    mu = FAMILIES["scion"].mu
    return HEAD_STEPS["scion"] / HEAD_STEPS["muon"] * math.sqrt(2 / math.pi) / math.sqrt(mu / (2 - mu))


def predictions() -> dict:
    """Per optimizer: {"mechanism", "point": {(hi, lo): ratio}, "ratios": {(hi, lo): (lo, hi)},
    "alternative": {(hi, lo): (lo, hi)}, "edges", "unstable_lr"} and, per mechanism, what the
    model says about the lr. "point": the relay model simulated (muon, scion) or the stall model's
    geometric middle of its two extrapolations (adamw); "ratios": the interval over the model's
    stated freedom (relay: simulated and describing function; stall: the two extrapolations);
    "alternative": the linear noise-floor regime over frac in [0.001, 0.5] of k_c(8) (it grows
    without bound as frac -> 1). "unstable_lr": lr_c(tau) / lr_c(1). adamw: "edge_lr_over_preset"
    {tau: (lo, hi)} = k_c(tau) / K, the lr (in preset units) below which delay tau is stable again.
    scion: "head_gain_over_muon", head_gain_ratio(). "gaps": predicted_gaps(name).
    Added after the first commit (9ded5e9), before any kept tau > 1 record was read: adamw's
    "edge_oscillation" (edge_oscillation_ratios) and "combined" {(hi, lo): (lo, hi)}, the interval
    a gap made of a stall part and an oscillation part can have ("ratios" stays the stall alone,
    the prediction as first committed)."""
    out = {}
    for name, f in FAMILIES.items():
        ratios = relay_ratios(name) if f.mechanism == "relay" else stall_ratios()
        lin = [linear_ratios(name, frac) for frac in (1e-3, 0.5)]
        point = {p: (r[0] if f.mechanism == "relay" else math.sqrt(r[0] * r[1])) for p, r in ratios.items()}
        out[name] = {"mechanism": f.mechanism, "point": point,
                     "ratios": {p: (min(r), max(r)) for p, r in ratios.items()},
                     "alternative": {p: (min(x[p] for x in lin), max(x[p] for x in lin)) for p in PAIRS},
                     "edges": edges(name), "unstable_lr": unstable_lr(name, 1)}
        if f.mechanism == "stall":
            osc = edge_oscillation_ratios(name)
            out[name]["edge_oscillation"] = osc
            # gap = stall part + oscillation part, both >= 0: by the mediant inequality its ratio
            # lies between the parts' ratios
            out[name]["combined"] = {p: (min(out[name]["ratios"][p][0], osc[p]), max(out[name]["ratios"][p][1], osc[p]))
                                     for p in PAIRS}
            fits = [adamw_fit(x) for x in ("loglinear", "power")]
            out[name]["edge_lr_over_preset"] = {
                tau: tuple(sorted(edges(name)[tau] / fit["K"] for fit in fits)) for tau in (0,) + TAUS}
        if name == "scion":
            out[name]["head_gain_over_muon"] = head_gain_ratio()
        out[name]["gaps"] = predicted_gaps(name)
    return out


def markdown_table(pred: dict | None = None) -> str:
    """The growth ratios as docs/tau_law.md prints them: point [interval] per pair, then the
    linear noise-floor alternative's range for the same pairs."""
    pred = predictions() if pred is None else pred
    head = "| optimizer | mechanism | " + " | ".join(f"gap({hi})/gap({lo})" for hi, lo in PAIRS) + \
           " | linear noise floor, same ratios |"
    lines = [head, "|" + "---|" * (len(PAIRS) + 3)]
    for name, p in pred.items():
        cells = [f"{p['point'][q]:.1f} [{p['ratios'][q][0]:.1f}, {p['ratios'][q][1]:.1f}]" for q in PAIRS]
        alt = "; ".join(f"{p['alternative'][q][0]:.1f}-{p['alternative'][q][1]:.1f}" for q in PAIRS)
        lines.append(f"| {name} | {p['mechanism']} | " + " | ".join(cells) + f" | {alt} |")
    return "\n".join(lines)


def edges_table(pred: dict | None = None) -> str:
    """k_c(tau) per optimizer and lr_c(tau) / lr_c(1), as docs/tau_law.md prints them."""
    pred = predictions() if pred is None else pred
    taus = (0,) + TAUS
    lines = ["| optimizer (mu, Nesterov) | " + " | ".join(f"k_c({t})" for t in taus) + " | "
             + " | ".join(f"lr_c({t})/lr_c(1)" for t in taus) + " |", "|" + "---|" * (2 * len(taus) + 1)]
    for name, p in pred.items():
        f = FAMILIES[name]
        lines.append(f"| {name} ({f.mu:g}, {'yes' if f.nesterov else 'no'}) | "
                     + " | ".join(f"{p['edges'][t]:.4g}" for t in taus) + " | "
                     + " | ".join(f"{p['unstable_lr'][t]:.3g}" for t in taus) + " |")
    return "\n".join(lines)


if __name__ == "__main__":   # pragma: no cover
    _p = predictions()
    print(markdown_table(_p))
    print()
    print(edges_table(_p))
    print()
    print("adamw edge_lr_over_preset:", {t: tuple(round(v, 3) for v in r) for t, r in _p["adamw"]["edge_lr_over_preset"].items()})
    print("adamw fits:", {x: {k: (round(v, 3) if isinstance(v, float) else v) for k, v in adamw_fit(x).items() if k != "s"} for x in ("loglinear", "power")})
    print("gaps from tau = 1:", {n: None if p["gaps"] is None else {t: tuple(round(v, 3) for v in r) for t, r in p["gaps"].items()} for n, p in _p.items()})
    print("adamw edge oscillation (k_c(lo)/k_c(hi))^2:", {q: round(v, 1) for q, v in _p["adamw"]["edge_oscillation"].items()})
    print("adamw combined:", {q: tuple(round(v, 1) for v in r) for q, r in _p["adamw"]["combined"].items()})
    print()
    print("muon's relay with gradient noise:")
    print(noise_table("muon"))
    print("scion head_gain_over_muon:", round(_p["scion"]["head_gain_over_muon"], 1))
