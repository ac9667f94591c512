"""Plug measured constants into the theory's momentum-error bounds: ``python -m gpu_runs.predict RUN_DIR ...``.

For each run directory (``gpu_runs.train --diag-every N --out RUN_DIR``) and each logged
diagnostics record: L = median of the measured ``L_local``, sigma, rho, eta (``--eta step``, the
default: the measured step norm ||d_t|| in the geometry, which is what the theory's eta bounds;
``--eta lr``: the scheduled lr, which understates it by Muon's shape factor and Adam's scaling),
mu = 1 - momentum (``config.json``; the optimizer's preset when unset), t = step, and for EF
r_w = the EMA of measured r. The bound (``theory.records.registry``: ``derived_sync_lemma`` for sync,
``derived_delayed_lemma_x`` for 2bw, ``derived_ef_lemma_trajectory`` for EF) is printed next
to the measured ``momentum_error``. A bound below the measurement is a violation: reported,
never hidden. Across runs (``gpu_runs.orderings``; a grid from ``gpu_runs.sweep``) it tests the
predicted orderings: the delay penalty grows with lr, higher momentum shrinks the gap, EF helps
where r_avg / eta < 1. Cells run with several seeds (``gpu_runs.sweep OUT_S --seed S``, all
passed together) give the seed noise of the gaps (``gpu_runs.seed_noise``), and each ordering is
then also counted on only the pairs that stand out of that noise. ``--png`` draws measured vs bound and the gaps along lr and momentum;
``--json`` writes everything; ``--markdown`` the tables.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lmo.presets import DEFAULT_MOMENTUM
from lmo.variants import EF, SYNC, TWO_BW
from theory.records import registry

from gpu_runs import orderings as od, seed_noise as sn
from gpu_runs import verified_files
from gpu_runs.cli import show_defaults
from gpu_runs.delay_fields import delay_of_json
from gpu_runs.diagnostics import DEBIASED_OPTIMIZERS
from gpu_runs.orderings import median_or_none, rest_key
from gpu_runs.recipe import TrainConfig, peak_lr

BOUND_OF = {SYNC: "derived_sync_lemma", TWO_BW: "derived_delayed_lemma_x", EF: "derived_ef_lemma_trajectory"}


def variant(cfg: dict) -> str:
    """The kind of the run's delay (``lmo.variants.Delay.kind``) from its JSON: its mode, or ef
    for 2bw with ef."""
    return delay_of_json(cfg).kind


def load_run(run_dir: Path) -> tuple[dict, list]:
    cfg = json.loads((run_dir / "config.json").read_text())
    log = [json.loads(line) for line in (run_dir / "log.jsonl").read_text().splitlines() if line.strip()]
    return cfg, log


def primary_mu(cfg: dict) -> float:
    if cfg.get("momentum") is not None:
        return 1.0 - float(cfg["momentum"])
    return 1.0 - float(DEFAULT_MOMENTUM[cfg["optimizer"]])


def eta_of(d: dict, eta: str) -> float:
    """The theory's eta for one diagnostics record (module docstring)."""
    if eta == "step" and d.get("d_norm"):
        return d["d_norm"]
    return d["eta"]


def predict_run(run_dir: Path, eta: str = "step") -> dict:
    """Rows (step, measured momentum error, bound) and the run's final val loss."""
    cfg, log = load_run(run_dir)
    return predict_record(cfg, log, eta, run_dir.name)


def predict_record(cfg: dict, log: list, eta: str = "step", name: str = "") -> dict:
    """:func:`predict_run` of a run given as its ``config.json`` dict and its log rows (those
    with ``diagnostics``, and rows with ``val_loss``). Each row: ``measured`` (the momentum
    buffer as stored), ``measured_used`` (the momentum the update uses: AdamW's bias-corrected
    m_hat_t, ``gpu_runs.diagnostics``; None for an AdamW record made before that diagnostic
    existed; the stored buffer for every other optimizer) and ``bound``."""
    diags = [r["diagnostics"] for r in log if "diagnostics" in r]
    var = variant(cfg)
    rows = []
    L = median_or_none([d.get("L_local") for d in diags])   # JSON turns a nan (no step yet) into null
    if diags and var in BOUND_OF and L is not None:
        bound = registry.get(BOUND_OF[var])
        mu = primary_mu(cfg)
        debiased = cfg["optimizer"] in DEBIASED_OPTIMIZERS   # the momentum its update uses: m_hat_t
        r_w = None
        for d in diags:
            r_w = d["r"] if r_w is None else (1 - mu) * r_w + mu * d["r"]
            if d.get("sigma") is None:
                continue
            consts = dict(L=L, sigma=d["sigma"], rho=d["rho"], eta=eta_of(d, eta), mu=mu, t=d["step"], r_w=r_w)
            b = float(bound.evaluate(**{k: consts[k] for k in bound.symbols}))
            rows.append(dict(step=d["step"], measured=d.get("momentum_error"), bound=b,
                             measured_used=d.get("momentum_error_debiased" if debiased else "momentum_error"),
                             r_over_eta=d["r"] / eta_of(d, eta) if eta_of(d, eta) > 0 else float("nan"),
                             r_over_eta_matrix=d.get("r_over_eta_matrix")))
    vals = [r["val_loss"] for r in log if "val_loss" in r]
    return dict(run=name, optimizer=cfg["optimizer"], variant=var, lr=cfg.get("lr"),
                final_val=vals[-1] if vals else None, rows=rows)


def summarize(run_dir: Path, eta: str = "step") -> dict:
    """``predict_run`` plus what ``gpu_runs.orderings`` needs: the resolved peak lr and beta, the
    settings key, the mean r and the theorem's constants (L, sigma, rho, eta, mu, K, Delta_0)."""
    cfg, log = load_run(run_dir)
    return summarize_record(cfg, log, eta, run_dir.name)


def summarize_record(cfg: dict, log: list, eta: str = "step", name: str = "") -> dict:
    """:func:`summarize` of a run given as its config dict and log rows (``log[0]["train_loss"]``
    is Delta_0's bound f(x_0))."""
    res = predict_record(cfg, log, eta, name)
    known = {k: v for k, v in cfg.items() if k in TrainConfig.__dataclass_fields__}
    diags = [r["diagnostics"] for r in log if "diagnostics" in r]
    mu = primary_mu(cfg)
    res.update(lr=peak_lr(TrainConfig(**known)), beta=round(1.0 - mu, 12), rest=rest_key(cfg),
               r_mean=sum(d["r"] for d in diags) / len(diags) if diags else None,
               r_over_eta_matrix=median_or_none([d.get("r_over_eta_matrix") for d in diags]), consts=None)
    L = median_or_none([d["L_local"] for d in diags])
    if diags and L is not None and log:
        res["consts"] = dict(L=L, sigma=median_or_none([d["sigma"] for d in diags]), rho=diags[0]["rho"],
                             eta=sum(eta_of(d, eta) for d in diags) / len(diags), mu=mu, K=cfg["steps"],
                             Delta_0=log[0]["train_loss"])
    return res


def per_run_table(results: list[dict], all_rows: bool) -> str:
    """One line per run (worst measured / bound over its diagnostics; ``all_rows``: every record)."""
    L = [f"{'run':<28}{'variant':<8}{'step':>6}{'measured':>11}{'bound':>11}{'ratio':>7}{'r/eta':>7}{'r/lr mat':>10}  holds"]
    for res in results:
        rows = [r for r in res["rows"] if r["measured"] is not None]
        if not all_rows and rows:
            rows = [max(rows, key=lambda r: r["measured"] / r["bound"])]
        for row in rows:
            m, b = row["measured"], row["bound"]
            mat = row.get("r_over_eta_matrix")
            L.append(f"{res['run']:<28}{res['variant']:<8}{row['step']:>6}{m:>11.3g}{b:>11.3g}{m / b:>7.2f}"
                     f"{row['r_over_eta']:>7.2f}{'-' if mat is None else f'{mat:.2f}':>10}  "
                     f"{'yes' if m <= b else 'VIOLATED'}")
        if not rows:
            L.append(f"{res['run']:<28}{res['variant']:<8}  (no diagnostics with a momentum error: --diag-every N)")
    n_bad = sum(r["measured"] is not None and r["measured"] > r["bound"] for res in results for r in res["rows"])
    n = sum(r["measured"] is not None for res in results for r in res["rows"])
    L.append(f"momentum error within the bound in {n - n_bad}/{n} diagnostics records"
             + ("" if all_rows else " (shown: each run's worst ratio)"))
    return "\n".join(L)


def plot(results: list[dict], lr_ord: list[dict], beta_ord: list[dict], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    ax = axes[0]
    for res in results:
        rows = [r for r in res["rows"] if r["measured"] is not None]
        if rows:
            ax.plot([r["step"] for r in rows], [r["measured"] / r["bound"] for r in rows], ".-", lw=0.8,
                    label=res["run"] if len(results) <= 8 else None)
    ax.axhline(1.0, color="k", ls="--", lw=1)
    ax.set(xlabel="step", ylabel="measured / bound  (momentum error)", title="bound holds below the line")
    if len(results) <= 8:
        ax.legend(fontsize=6)
    for ax, rows, xl in ((axes[1], lr_ord, "peak lr"), (axes[2], beta_ord, "momentum beta")):
        for o in rows:
            (k, v), = o["fixed"].items()
            sd = o.get("noise_sd")   # pooled seed sd (gpu_runs.seed_noise), when cells were replicated
            ax.errorbar(o["xs"], o["gaps"], yerr=sd, fmt="o-", capsize=3,
                        label=f"{o['optimizer']} ({k}={v:.3g})" + (f", ±{sd:.3f} seed sd" if sd else ""))
        ax.axhline(0.0, color="k", lw=0.5)
        ax.set(xlabel=xl, ylabel="final val gap 2bw - sync", title=f"delay penalty vs {xl}")
        if xl == "peak lr":
            ax.set_xscale("log")
        if rows:
            ax.legend(fontsize=7)
    fig.tight_layout()
    verified_files.atomic_save(path, lambda tmp: fig.savefig(tmp, dpi=120, format=Path(path).suffix[1:] or "png"))
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m gpu_runs.predict", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                                epilog="Grids of runs: python -m gpu_runs.sweep OUT; then predict OUT/*_*.")
    p.add_argument("runs", nargs="+", help="run directories written by gpu_runs.train --diag-every N --out DIR")
    p.add_argument("--png", default=None, help="write the figure (measured/bound, gap vs lr, gap vs beta)")
    p.add_argument("--json", default=None, help="write every number to this JSON file")
    p.add_argument("--markdown", default=None, help="write the tables to this markdown file")
    p.add_argument("--all-rows", action="store_true", help="print every diagnostics record, not each run's worst")
    p.add_argument("--eta", choices=("step", "lr"), default="step",
                   help="the theory's eta: the measured step norm ||d_t|| (default) or the scheduled lr")
    show_defaults(p)
    a = p.parse_args(argv)
    missing = [r for r in a.runs if not (Path(r) / "config.json").exists() or not (Path(r) / "log.jsonl").exists()]
    if missing:
        p.error(f"not a run directory (config.json and log.jsonl expected): {', '.join(missing)}")
    try:
        results = [summarize(Path(r), a.eta) for r in a.runs]
    except (ValueError, KeyError) as e:   # a run directory whose files do not parse
        print(f"python -m gpu_runs.predict: error: cannot read the runs: {type(e).__name__}: {e}",
              file=sys.stderr)
        return 2
    cs = od.cells(results)
    lr_ord, beta_ord, ef_ord = od.sweep_orderings(cs, "lr"), od.sweep_orderings(cs, "beta"), od.ef_orderings(cs)
    reps = sn.replicates(cs)
    sn.annotate(reps, lr_ord, beta_ord, ef_ord)
    report = od.format_report(cs, lr_ord, beta_ord, ef_ord) + "\n\n" + sn.format_noise(reps, lr_ord, beta_ord, ef_ord)
    print(per_run_table(results, a.all_rows) + "\n\n" + report)
    if a.markdown:
        verified_files.write_text(a.markdown, "```\n" + per_run_table(results, a.all_rows) + "\n```\n\n" + report + "\n")
    if a.json:
        strip = lambda c: {k: v for k, v in c.items() if k not in ("runs", "rest")}
        verified_files.write_text(a.json, json.dumps(dict(
            runs=[{k: v for k, v in r.items() if k != "rest"} for r in results], cells=[strip(c) for c in cs],
            lr_orderings=lr_ord, momentum_orderings=beta_ord, ef_orderings=ef_ord, replicates=reps), indent=1))
    if a.png:
        plot(results, lr_ord, beta_ord, a.png)
        print(f"wrote {a.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
