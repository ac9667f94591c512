"""Shared matplotlib (Agg) helpers: one style for every figure, saved as PNG and PDF."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from lmo.variants import LABELS  # noqa: E402

STEP_LABEL = "training step"

#: one line style per delay kind and mitigation; the labels are lmo.variants.LABELS (Delay.label)
VARIANT_STYLE = {k: dict(style, label=LABELS[k]) for k, style in {
    "sync": dict(color="black", linestyle="-"),
    "2bw": dict(color="tab:red", linestyle="--"),
    "ef": dict(color="tab:blue", linestyle="-."),
    "pipedream": dict(color="tab:purple", linestyle=":"),
    "sync_start": dict(color="tab:orange", linestyle="--"),
    "sync_cooldown": dict(color="tab:green", linestyle="--"),
    "dc_asgd": dict(color="tab:brown", linestyle="--"),
}.items()}

OPT_LABEL = {
    "adamw": "AdamW", "muon": "Muon", "normuon": "NorMuon", "adamuon": "AdaMuon", "soap": "SOAP",
    "nadam": "NAdam", "adan": "Adan", "mars": "MARS", "lion": "Lion", "signum": "Signum",
}


def label(opt: str) -> str:
    return OPT_LABEL.get(opt, opt)


def new(ncols: int = 1, nrows: int = 1, width: float = 5.0, height: float = 3.6):
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False)
    return fig, axes.ravel()


def save(fig, out_dir: Path, name: str) -> list[Path]:
    """Write ``<name>.png`` and ``<name>.pdf`` under ``out_dir``; close the figure."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    paths = [out_dir / f"{name}.png", out_dir / f"{name}.pdf"]
    fig.savefig(paths[0], dpi=130)
    fig.savefig(paths[1])
    plt.close(fig)
    return paths


def mean_curve(curves: Sequence[tuple[list, list]]):
    """Pointwise mean, min and max of curves on their common steps: (steps, mean, lo, hi)."""
    common = sorted(set.intersection(*(set(c[0]) for c in curves))) if curves else []
    per = [dict(zip(*c)) for c in curves]
    mean = [sum(p[s] for p in per) / len(per) for s in common]
    lo = [min(p[s] for p in per) for s in common]
    hi = [max(p[s] for p in per) for s in common]
    return common, mean, lo, hi


def plot_curves(ax, curves: Sequence[tuple[list, list]], style: dict) -> None:
    """Mean curve over seeds, with the min-max band when there are several
    (say so in the title: :func:`seeds_note`)."""
    if not curves:
        return
    x, m, lo, hi = mean_curve(curves)
    ax.plot(x, m, **style)
    if len(curves) > 1:
        ax.fill_between(x, lo, hi, color=style.get("color"), alpha=0.15, linewidth=0)


def focus_ylim(ax, curves: Sequence[tuple[list, list]], skip_frac: float = 0.2) -> None:
    """y-limits that show the late-training gap: from the minimum to the largest value
    after the first ``skip_frac`` of training (the early transient would hide the gap)."""
    ys_late, ys_all = [], []
    for xs, ys in curves:
        if not xs:
            continue
        cut = xs[0] + skip_frac * (xs[-1] - xs[0])
        ys_late += [y for x, y in zip(xs, ys) if x >= cut and math.isfinite(y)]
        ys_all += [y for y in ys if math.isfinite(y)]
    if ys_late and max(ys_late) > min(ys_all):
        lo, hi = min(ys_all), max(ys_late)
        pad = 0.05 * (hi - lo)
        ax.set_ylim(lo - pad, hi + pad)


def seeds_note(n: int) -> str:
    return "" if n <= 1 else f"; mean of {n} seeds, band = min-max"


def seed_errorbars(per_seed: Sequence[Sequence[float]]) -> dict:
    """``ax.bar`` keyword arguments for whiskers of +- one sample std over seeds, for bars
    whose values are the means of ``per_seed``; {} when no bar has two finite seeds."""
    def std(xs):
        xs = [x for x in xs if x is not None and math.isfinite(x)]
        if len(xs) < 2:
            return 0.0
        m = sum(xs) / len(xs)
        return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))
    errs = [std(xs) for xs in per_seed]
    return {"yerr": errs, "capsize": 3, "ecolor": "dimgray"} if any(errs) else {}


def mark_paper(ax, xs: Sequence[float], values: Sequence[float | None], label: str | None) -> None:
    """The paper's value of each bar as a short black line at ``xs`` (None: not given, no mark)."""
    pts = [(x, v) for x, v in zip(xs, values) if v is not None]
    if pts:
        ax.scatter([x for x, _ in pts], [v for _, v in pts], marker="_", s=200, color="black",
                   zorder=3, label=label)
