"""The verification report: every bound x problem x variant checked empirically, the
certificates' looseness, planted mutants, and the falsification search.

``run_report(quick, out_dir) -> dict`` (reused by paper_figs) writes report.json,
report.md and the PNG figures of verify.figures into ``out_dir`` when given.
"""
from __future__ import annotations

import json
import math
import os
import time

import torch

from lmo.geometry import L2, Sign, Spectral
from lmo.variants import RUN_VARIANTS as VARIANTS
from theory.records.registry import all_bounds

from .adversarial import search_bases
from .check import applicable, check_bound, check_run
from .montecarlo import run
from .planted_bounds import catching_scenario, mutants
from .noise import make_noise
from .problems import random_cosine_sum, random_least_squares, random_psd, random_quadratic, vector_quadratic
from .variants import lmo_available


def problems():
    """The report's problems: exact-L quadratics (spectral, sign by enumeration, l2),
    least squares, and the non-convex cosine sum (proven bound on L)."""
    g = torch.Generator().manual_seed(0)
    return [random_quadratic(6, 6, Spectral(), g, cond_a=10.0, cond_b=3.0),
            random_least_squares(6, 4, Spectral(), g),
            random_cosine_sum(4, 4, Spectral(), g, scale=4.0),
            vector_quadratic(random_psd(4, g, 10.0, top=2.0), Sign(), x0=torch.full((1, 4), 5.0), name="vector4_sign"),
            vector_quadratic(random_psd(4, g, 10.0), L2(), x0=torch.full((1, 4), 5.0), name="vector4_l2")]


def label(bound_name: str) -> str:
    """The bound's name with its reading, for the paper's bounds (theory.records.paper_readings)."""
    from theory.records.registry import get
    b = get(bound_name)
    if not b.reading:
        return bound_name
    short = b.reading.split(":")[0]
    if short == "noise alone":
        return f"{bound_name} (the noise term alone: not a bound by itself; comparison only)"
    return f"{bound_name} (reading {short})"


def _fmt(x):
    return "inf" if x == math.inf else f"{x:.3f}"


def run_report(quick: bool = True, out_dir: str | None = None, progress=print) -> dict:
    """Run every stage; returns a JSON-able dict (see the module docstring)."""
    t0 = time.time()
    progress = progress or (lambda *_: None)
    K, R = (100, 64) if quick else (400, 256)
    lr, mu = 0.05, 0.1
    noises = ("gaussian", "aligned") if quick else ("gaussian", "anisotropic", "student_t", "aligned")
    bounds = all_bounds()
    out = dict(quick=quick, backend="lmo" if lmo_available() else "reference", steps=K, seeds=R, lr=lr, mu=mu,
               certificates=[], checks=[], stationary_paper=[], mutants=[], adversarial=[])
    if out_dir:  # refuse an unwritable directory before minutes of Monte Carlo
        ensure_writable(out_dir)
    progress(f"[verify] backend: {out['backend']}; stage 1/5: certificates")
    probs = problems()
    for p in probs:
        d = p.describe()
        d["L_lower"] = p.L_lower(torch.Generator().manual_seed(1), restarts=16 if quick else 64)
        d["looseness"] = d["L"] / d["L_lower"]
        out["certificates"].append(d)
        progress(f"  {p.name:18s} {p.geometry.name:9s} L={d['L']:.4g} lower={d['L_lower']:.4g} exact={d['L_exact']}")
    progress(f"[verify] stage 2/5: Monte Carlo checks ({len(probs)} problems x {len(noises)} noises x 4 variants, K={K}, R={R})")
    units, done = len(probs) * len(noises), 0
    for p in probs:
        for nz in noises:
            noise = make_noise(nz, 0.5, shape=p.shape)
            for v in VARIANTS:
                res = run(p, noise, v, lr, mu, K, R, stride=1)
                for c in check_run(res, bounds):
                    out["checks"].append(c.as_dict())
                    if c.bound.startswith("paper"):
                        s = check_bound(next(b for b in bounds if b.name == c.bound), res,
                                        from_step=math.ceil(5 / mu)).as_dict()
                        out["stationary_paper"].append(s)
            done += 1
            progress(f"  [{done}/{units}] {p.name:18s} {nz:10s} done ({time.time() - t0:.0f}s)")
    progress("[verify] stage 3/5: planted wrong bounds")
    for name, b in mutants().items():
        c = check_bound(b, run(**catching_scenario(name)))
        out["mutants"].append(dict(mutant=name, caught=c.violated, tightness=c.tightness, expr=str(b.expr)))
        progress(f"  mutant {name:16s} caught={c.violated} ratio={c.tightness:.3f}")
    progress("[verify] stage 4/5: falsification search")
    names = (["paper_c1_y", "paper_c2_y", "paper_c1_x", "paper_c2_x", "paper_delayed_noise_consistent",
              "derived_sync_lemma", "derived_delayed_lemma", "derived_delayed_theorem",
              "derived_ef_lemma_trajectory"] if quick else [b.name for b in bounds])
    for i, name in enumerate(names):
        b = next(x for x in bounds if x.name == name)
        # pick the base on the search's own value; report the winner's re-evaluated ratio
        best = search_bases(b, "quick" if quick else "full")
        out["adversarial"].append(best)
        progress(f"  [{i + 1}/{len(names)}] {name:32s} re-evaluated ratio {best['confirmed_ratio']:.3f}"
                 f" violated={best['violated']}")
    out["figures"] = []
    if out_dir:
        from .figures import make_theory_figures
        progress("[verify] stage 5/5: figures")
        os.makedirs(out_dir, exist_ok=True)
        out["figures"] = make_theory_figures(out_dir, quick)
        with open(os.path.join(out_dir, "report.json"), "w") as fh:
            json.dump(out, fh, indent=1, default=str)
        with open(os.path.join(out_dir, "report.md"), "w") as fh:
            fh.write(markdown(out))
    out["wall_s"] = time.time() - t0
    progress(f"[verify] done in {out['wall_s']:.0f}s")
    return out


def ensure_writable(out_dir: str) -> None:
    """Create ``out_dir`` and write a probe file, or raise OSError naming the directory."""
    try:
        os.makedirs(out_dir, exist_ok=True)
        probe = os.path.join(out_dir, ".verify_write_probe")
        with open(probe, "w") as fh:
            fh.write("ok")
        os.remove(probe)
    except OSError as e:
        raise OSError(f"--out {out_dir!r} is not a writable directory: {e.strerror or e}") from None


def state_of(checks) -> str:
    """Worst verdict over checks: violated < not violated < holds confidently."""
    order = {"violated": 0, "not violated": 1, "holds confidently": 2}
    return min((c["verdict"] for c in checks), key=order.__getitem__)


def summary(out: dict) -> list[dict]:
    """One row per bound x problem x variant: the worst verdict over the noise models
    (violated / not violated / holds confidently), max tightness."""
    rows, groups = {}, {}
    for c in out["checks"]:
        key = (c["bound"], c["problem"], c["run_variant"])
        r = rows.setdefault(key, dict(bound=key[0], problem=key[1], variant=key[2], holds=True, tightness=0.0))
        groups.setdefault(key, []).append(c)
        r["holds"] &= c["holds"]
        r["tightness"] = max(r["tightness"], c["tightness"])
    for key, r in rows.items():
        r["state"] = state_of(groups[key])
    adv = {a["bound"]: a for a in out["adversarial"]}
    for r in rows.values():
        a = adv.get(r["bound"])
        r["worst_found"] = a["confirmed_ratio"] if a else None
    return list(rows.values())


def markdown(out: dict) -> str:
    lines = [f"# verify report ({'quick' if out['quick'] else 'full'}; backend {out['backend']};"
             f" K={out['steps']}, R={out['seeds']}, eta={out['lr']}, mu={out['mu']})", "",
             "CI: one-sided Student-t for the measured quantity, empirical-Bernstein for r_w / r_avg,"
             " family-wise 99%, Bonferroni over steps and both families (verify.check); the level is exact"
             " for the empirical-Bernstein bounds and approximate for the t bounds, which assume near-normal"
             " means (python -m verify.coverage measures them on skewed data). ratio = measured mean / bound.",
             "state (worst over the noise models): **violated** = the lower confidence bound exceeds the bound;"
             " **holds confidently** = the upper confidence bound is below the bound (r_w / r_avg at their lower"
             " bound); **not violated** = neither. On right-skewed data 'violated' is conservative and"
             " 'holds confidently' approximate (python -m verify.coverage).", "",
             "| bound | problem | variant | state | ratio (max over steps) | worst ratio found (search winner re-evaluated on fresh seeds) |", "|---|---|---|---|---|---|"]
    for r in summary(out):
        wf = "" if r["worst_found"] is None else _fmt(r["worst_found"])
        lines.append(f"| {label(r['bound'])} | {r['problem']} | {r['variant']} | {r['state']}"
                     f" | {_fmt(r['tightness'])} | {wf} |")
    lines += ["", "| problem | geometry | certified L | exact | numerical lower | looseness |", "|---|---|---|---|---|---|"]
    for c in out["certificates"]:
        lines.append(f"| {c['problem']} | {c['geometry']} | {c['L']:.4g} | {c['L_exact']} | {c['L_lower']:.4g} | {c['looseness']:.3f} |")
    lines += ["", "| mutant | caught | ratio |", "|---|---|---|"]
    lines += [f"| {m['mutant']} | {m['caught']} | {_fmt(m['tightness'])} |" for m in out["mutants"]]
    lines += ["", "| bound (search) | re-evaluated ratio (fresh seeds, at the step the search chose) | fresh seeds | violated | instance |", "|---|---|---|---|---|"]
    lines += [f"| {label(a['bound'])} | {_fmt(a['confirmed_ratio'])} | {a.get('confirm_seeds', '')} | {a['violated']} | `{a['instance']}` |"
              for a in out["adversarial"]]
    return "\n".join(lines) + "\n"


__all__ = ["run_report", "summary", "markdown", "problems", "applicable", "label", "ensure_writable", "state_of"]
