"""Shared matplotlib (Agg) helpers: one style for every figure, saved as PNG and PDF."""
from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from gpu_runs.verified_files import atomic_save  # noqa: E402
from lmo.variants import LABELS  # noqa: E402

from ..statistics.t_tests import t_quantile  # noqa: E402

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


#: {figure file stem: its layout defects} of the figures saved in this process (:func:`save`)
DEFECTS: dict[str, list[str]] = {}


def _texts(fig) -> list[tuple[str, object]]:
    """(what, artist) of every visible, non-empty text a reader must be able to read: the
    suptitle, each axes' titles, axis labels and tick labels, and each legend's entries."""
    out = []
    if fig._suptitle is not None:
        out.append(("suptitle", fig._suptitle))
    for i, ax in enumerate(fig.axes):
        for where in ("title", "_left_title", "_right_title"):
            out.append((f"axes {i} title", getattr(ax, where)))
        out.append((f"axes {i} x label", ax.xaxis.label))
        out.append((f"axes {i} y label", ax.yaxis.label))
        for axis, nm in ((ax.xaxis, "x"), (ax.yaxis, "y")):
            lo, hi = sorted(axis.get_view_interval())
            span = (hi - lo) * 1e-9
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():   # only the drawn ones: inside the view
                if lo - span <= tick.get_loc() <= hi + span:
                    out += [(f"axes {i} {nm} tick label", lab) for lab in (tick.label1, tick.label2)]
        leg = ax.get_legend()
        if leg is not None:
            out += [(f"axes {i} legend", t) for t in leg.get_texts()]
    return [(w, a) for w, a in out if a.get_visible() and a.get_text().strip()]


#: what a figure drawn over seeds must say of its whiskers / bands, in one of its texts
INTERVAL_WORDS = ("95 % t interval", "Fieller 95 %", "one seed")


def layout_defects(fig, over_seeds: bool = True) -> list[str]:
    """What a reader would trip over in ``fig`` as it will be saved: text cut by the figure's
    edge, two titles / axis labels overlapping, two tick labels of one axis overlapping (e.g.
    duplicated minor labels), a plotted axes without an axis label, and (``over_seeds``: a
    figure of training runs) no text that says what its whiskers are or that its points are one
    seed (:data:`INTERVAL_WORDS`, as :func:`seeds_note` writes them)."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    box = fig.bbox
    texts = [(w, a, a.get_window_extent(r)) for w, a in _texts(fig)]
    bad = []
    said = " ".join(a.get_text().replace("\n", " ") for _, a, _ in texts)
    if over_seeds and not any(w in " ".join(said.split()) for w in INTERVAL_WORDS):
        bad.append(f"no text says what its whiskers are or that its points are one seed ({INTERVAL_WORDS})")
    for w, a, b in texts:
        if b.x0 < box.x0 - 1 or b.y0 < box.y0 - 1 or b.x1 > box.x1 + 1 or b.y1 > box.y1 + 1:
            bad.append(f"{w} {a.get_text()[:40]!r} is cut by the figure's edge")
    heads = [(w, a, b) for w, a, b in texts if "tick" not in w and "legend" not in w]
    for i, (w1, a1, b1) in enumerate(heads):
        for w2, a2, b2 in heads[i + 1:]:
            if b1.overlaps(b2):
                bad.append(f"{w1} {a1.get_text()[:30]!r} overlaps {w2} {a2.get_text()[:30]!r}")
    ticks: dict = {}
    for w, a, b in texts:
        if "tick" in w:
            ticks.setdefault(w, []).append((a, b))
    for w, items in ticks.items():
        for i, (a1, b1) in enumerate(items):
            if any(b1.overlaps(b2) for _, b2 in items[i + 1:]):
                bad.append(f"{w}s overlap ({a1.get_text()[:20]!r})")
                break
    for i, ax in enumerate(fig.axes):
        if ax.get_visible() and ax.has_data() and not (ax.get_xlabel() and ax.get_ylabel()):
            bad.append(f"axes {i} ({ax.get_title()[:30]!r}) lacks an axis label")
    return bad


def _wrap(text_artist, length_pt: float) -> None:
    text = text_artist.get_text()
    if text:
        per_line = max(12, int(length_pt / (0.55 * text_artist.get_fontsize())))
        text_artist.set_text("\n".join(textwrap.fill(part, per_line) for part in text.split("\n")))


def wrap_titles(fig) -> None:
    """Break every axes title, x label and y label into lines that fit its axes' width (titles,
    x labels) or height (y labels), at ~0.55 of the font size per character: a long one would run
    into its neighbour's, into the title, or off the figure."""
    for ax in fig.axes:
        pos = ax.get_position()
        width_pt, height_pt = pos.width * fig.get_figwidth() * 72, pos.height * fig.get_figheight() * 72
        _wrap(ax.title, width_pt)
        _wrap(ax.xaxis.label, width_pt)
        _wrap(ax.yaxis.label, 0.9 * height_pt)


def save(fig, out_dir: Path, name: str, over_seeds: bool = True) -> list[Path]:
    """Write ``<name>.png`` and ``<name>.pdf`` under ``out_dir``; close the figure. Its layout
    defects (:func:`layout_defects`; ``over_seeds=False`` for a figure of no training runs: a
    theory curve, a timing) are recorded in :data:`DEFECTS`."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    wrap_titles(fig)
    fig.tight_layout()
    DEFECTS[name] = layout_defects(fig, over_seeds)
    paths = [out_dir / f"{name}.png", out_dir / f"{name}.pdf"]
    # each written whole or not at all (a temporary file renamed into place): a full disk leaves
    # the previous figure, never half of one
    atomic_save(paths[0], lambda tmp: fig.savefig(tmp, format="png", dpi=130))
    atomic_save(paths[1], lambda tmp: fig.savefig(tmp, format="pdf"))
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
    """Mean curve over seeds, with the band of the 95 % t interval of the mean at each step when
    there are several (say so in the title: :func:`seeds_note`)."""
    if not curves:
        return
    x, m, _, _ = mean_curve(curves)
    ax.plot(x, m, **style)
    if len(curves) > 1:
        per = [dict(zip(*c)) for c in curves]
        h = [t_halfwidth([p[s] for p in per]) for s in x]
        ax.fill_between(x, [a - b for a, b in zip(m, h)], [a + b for a, b in zip(m, h)], color=style.get("color"),
                        alpha=0.15, linewidth=0)


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


#: what every whisker and '±' of the figures is (issue 51 item 2: the interval the verdicts use)
WHISKERS = "whiskers: 95 % t interval of the mean over seeds (n >= 2); a point without one is one seed"


def seeds_note(n: int) -> str:
    """What a title says of its n seeds: one seed (no interval), or the mean and its interval."""
    return "; one seed, no interval" if n <= 1 else f"; mean of {n} seeds, band / whiskers = 95 % t interval"


def seeds_span_note(per_seed: Sequence[Sequence[float]]) -> str:
    """:func:`seeds_note` for points whose seed counts differ (``per_seed``: each point's values)."""
    ns = [sum(1 for y in v if y is not None and math.isfinite(y)) for v in per_seed]
    ns = [n for n in ns if n] or [0]
    lo, hi = min(ns), max(ns)
    if hi <= 1:
        return seeds_note(1)
    if lo == hi:
        return f"; {hi} seeds per point, whiskers = 95 % t interval"
    return f"; {lo}-{hi} seeds per point, whiskers = 95 % t interval where n >= 2, none for one seed"


def t_halfwidth(xs: Sequence[float]) -> float:
    """t_{0.975, n-1} s / sqrt(n) of the finite ``xs`` (0 with fewer than 2): the half-width of
    the 95 % Student-t interval of their mean, the interval the verdicts print.

    >>> round(t_halfwidth([1.0, 2.0, 3.0]), 3)     # t_{0.975,2} = 4.303, s = 1
    2.484
    """
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    if len(xs) < 2:
        return 0.0
    m = sum(xs) / len(xs)
    s = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))
    return t_quantile(0.975, len(xs) - 1) * s / math.sqrt(len(xs))


def seed_errorbars(per_seed: Sequence[Sequence[float]]) -> dict:
    """``ax.bar`` / ``ax.errorbar`` keyword arguments for whiskers of the 95 % t interval of the
    mean over seeds (:func:`t_halfwidth`), for bars whose values are the means of ``per_seed``;
    {} when no bar has two finite seeds."""
    errs = [t_halfwidth(xs) for xs in per_seed]
    return {"yerr": errs, "capsize": 3, "ecolor": "dimgray"} if any(errs) else {}


#: the bottom of a log axis of a gap's size (nats/byte): a whisker that reaches it includes 0
SIZE_FLOOR = 1e-3


def size_bars(ax, xs: Sequence[float], per_seed: Sequence[Sequence[float]], width: float, color: str,
              label: str | None = None, floor: float = SIZE_FLOOR) -> None:
    """Bars of the size |m| of each mean m of ``per_seed`` (a gap that may be negative) on a log
    axis, from ``floor``: filled where m > 0, hollow and hatched (edge in ``color``) where m < 0, so
    magnitudes stay readable from 0.001 to 1 and the sign is still seen (no symlog). Whiskers: the 95 %
    t interval of the mean (:func:`t_halfwidth`, n >= 2), its lower end drawn at ``floor`` where the
    interval reaches 0; a bar without one is one seed. Missing means draw nothing."""
    pts = []
    for x, seeds in zip(xs, per_seed):
        v = [y for y in seeds if y is not None and math.isfinite(y)]
        if v:
            m = sum(v) / len(v)
            size, h = max(abs(m), floor), t_halfwidth(v)
            pts.append((x, m > 0, size, size - max(size - h, floor), h))
    for filled in (True, False):
        sel = [p for p in pts if p[1] == filled]
        if not sel:
            continue
        style = dict(color=color) if filled else dict(facecolor="white", edgecolor=color, hatch="///")
        err = {"yerr": [[p[3] for p in sel], [p[4] for p in sel]], "capsize": 3, "ecolor": "dimgray"} \
            if any(p[4] for p in sel) else {}
        ax.bar([p[0] for p in sel], [p[2] - floor for p in sel], width=width, bottom=floor, **style, **err,
               label=label if filled or not any(p[1] for p in pts) else None)
    ax.set_yscale("log")
    ax.set_ylim(bottom=floor)


def sign_handles() -> list:
    """Legend entries that say what a filled and a hollow bar of :func:`size_bars` mean."""
    from matplotlib.patches import Patch
    return [Patch(facecolor="gray", label="filled: gap > 0 (delay costs loss)"),
            Patch(facecolor="white", edgecolor="gray", hatch="///", label="hollow: gap < 0 (below sync)")]


def interval_whiskers(vals: Sequence[float], ivs: Sequence[tuple], lim: tuple) -> list:
    """[below, above] whisker lengths for values ``vals`` with intervals ``ivs`` [(lo, hi)]: an
    infinite end is drawn past the axis range ``lim`` (so it is seen to run off), a missing value
    gets none."""
    edge = lim[1] - lim[0] + 1
    below = [0.0 if not math.isfinite(v) else edge if not math.isfinite(lo) else max(v - lo, 0.0)
             for v, (lo, _) in zip(vals, ivs)]
    above = [0.0 if not math.isfinite(v) else edge if not math.isfinite(hi) else max(hi - v, 0.0)
             for v, (_, hi) in zip(vals, ivs)]
    return [below, above]


def mark_paper(ax, xs: Sequence[float], values: Sequence[float | None], label: str | None) -> None:
    """The paper's value of each bar as a short black line at ``xs`` (None: not given, no mark)."""
    pts = [(x, v) for x, v in zip(xs, values) if v is not None]
    if pts:
        ax.scatter([x for x, _ in pts], [v for _, v in pts], marker="_", s=200, color="black",
                   zorder=3, label=label)
