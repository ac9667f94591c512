"""Plug measured constants into the theory's momentum-error bounds: ``python -m gpu_runs.predict RUN_DIR ...``.

For each run directory (``gpu_runs.train --diag-every N --out RUN_DIR``) and each logged
diagnostics record: L = median of the measured ``L_local``, sigma, rho, eta (the scheduled lr),
mu = 1 - momentum (``config.json``; the optimizer's preset when unset), t = step, and for EF
r_w = the EMA of measured r. The bound (``theory.registry``: ``derived_sync_lemma`` for sync,
``derived_delayed_lemma_x`` for 2bw, ``derived_ef_lemma_trajectory`` for EF) is printed next
to the measured ``momentum_error``. Across runs it reports the final val-loss ordering.
A bound below the measurement is a violation: reported, never hidden. Writes a PNG with --png.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

BOUND_OF = {"sync": "derived_sync_lemma", "2bw": "derived_delayed_lemma_x", "ef": "derived_ef_lemma_trajectory"}


def variant(cfg: dict) -> str:
    if cfg["mode"] == "2bw":
        return "ef" if cfg["ef"] else "2bw"
    return "sync" if cfg["mode"] == "sync" else cfg["mode"]


def load_run(run_dir: Path) -> tuple[dict, list]:
    cfg = json.loads((run_dir / "config.json").read_text())
    log = [json.loads(line) for line in (run_dir / "log.jsonl").read_text().splitlines() if line.strip()]
    return cfg, log


def primary_mu(cfg: dict) -> float:
    if cfg.get("momentum") is not None:
        return 1.0 - float(cfg["momentum"])
    from lmo.presets import DEFAULT_MOMENTUM
    return 1.0 - float(DEFAULT_MOMENTUM[cfg["optimizer"]])


def predict_run(run_dir: Path) -> dict:
    """Rows (step, measured momentum error, bound) and the run's final val loss."""
    from theory import registry

    cfg, log = load_run(run_dir)
    diags = [r["diagnostics"] for r in log if "diagnostics" in r]
    var = variant(cfg)
    rows = []
    if diags and var in BOUND_OF:
        bound = registry.get(BOUND_OF[var])
        L = statistics.median(d["L_local"] for d in diags if d["L_local"] == d["L_local"])
        mu = primary_mu(cfg)
        r_w = None
        for d in diags:
            r_w = d["r"] if r_w is None else (1 - mu) * r_w + mu * d["r"]
            consts = dict(L=L, sigma=d["sigma"], rho=d["rho"], eta=d["eta"], mu=mu, t=d["step"], r_w=r_w)
            b = float(bound.evaluate(**{k: consts[k] for k in bound.symbols}))
            rows.append(dict(step=d["step"], measured=d.get("momentum_error"), bound=b, r_over_eta=d["r_over_eta"]))
    vals = [r["val_loss"] for r in log if "val_loss" in r]
    return dict(run=run_dir.name, optimizer=cfg["optimizer"], variant=var, lr=cfg.get("lr"),
                final_val=vals[-1] if vals else None, rows=rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m gpu_runs.predict", description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", help="run directories written by gpu_runs.train --diag-every N --out DIR")
    p.add_argument("--png", default=None, help="write measured vs bound per run to this PNG")
    a = p.parse_args(argv)
    results = [predict_run(Path(r)) for r in a.runs]
    print(f"{'run':<20}{'variant':<8}{'step':>6}{'measured':>12}{'bound':>12}{'r/eta':>8}  holds")
    for res in results:
        for row in res["rows"]:
            m = row["measured"]
            holds = "-" if m is None else ("yes" if m <= row["bound"] else "VIOLATED")
            ms = "n/a" if m is None else f"{m:.3g}"
            print(f"{res['run']:<20}{res['variant']:<8}{row['step']:>6}{ms:>12}{row['bound']:>12.3g}"
                  f"{row['r_over_eta']:>8.2f}  {holds}")
    by = {(r["optimizer"], r["variant"]): r["final_val"] for r in results if r["final_val"] is not None}
    for opt in sorted({o for o, _ in by}):
        if (opt, "sync") in by:
            gaps = {v: by[(opt, v)] - by[(opt, "sync")] for o, v in by if o == opt and v != "sync"}
            if not gaps:
                continue
            print(f"{opt}: val-loss gap vs sync " + ", ".join(f"{v} {g:+.4f}" for v, g in gaps.items()))
            if "2bw" in gaps and "ef" in gaps:
                print(f"  EF {'helps' if gaps['ef'] < gaps['2bw'] else 'does not help'} here")
    if a.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6, 4))
        for res in results:
            st = [r["step"] for r in res["rows"] if r["measured"] is not None]
            ax.plot(st, [r["measured"] for r in res["rows"] if r["measured"] is not None], "o-", label=f"{res['run']} measured")
            ax.plot([r["step"] for r in res["rows"]], [r["bound"] for r in res["rows"]], "--", label=f"{res['run']} bound")
        ax.set_yscale("log"); ax.set_xlabel("step"); ax.set_ylabel("||m_t - grad f||_*"); ax.legend(fontsize=6)
        fig.tight_layout(); fig.savefig(a.png, dpi=120)
        print(f"wrote {a.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
