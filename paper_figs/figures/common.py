"""What every figure module shares: the context it renders from, its output, run builders.

A figure module defines ``NAME``, ``TITLE``, ``grid(profile) -> {cell: [settings per seed]}``
(the training runs it needs, declared once: the pipeline trains or looks up
``runs_of(grid)``, deduplicated across figures, and ``build`` reads the same cells back) and
``build(ctx) -> FigureOutput`` (for a grid figure: ``grid_figure(NAME, TITLE, grid, render)``);
a figure without training defines ``runs(profile) -> []`` and ``quick_mode(profile) -> bool`` (its
external calls in their quick mode). A figure's knobs are a frozen spec in its own module, one
row per profile name (:func:`spec_of`); knobs and run spellings that several figures share are
in :mod:`paper_figs.figures.grids`, and no figure module imports another. A figure shown again
at the tuned sync lrs takes ``tuned=True`` in ``grid`` and ``build`` (:class:`TunedReading`).
Variants of a run (docs/design.md §4), named as in ``lmo.variants``:

    sync       x_{t+1} = x_t + d_t
    2bw        x_{t+1} = x_t + d_{t-1}                (PipeDream-2BW, one-step delay)
    ef         x_{t+1} = x_t + 2 d_{t-1} - d_{t-2}    (error feedback)
    pipedream  stage s of P has delay P - 1 - s
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from lmo.presets import DEFAULT_LR
from lmo.variants import EF, MITIGATIONS, ONE_STEP, PIPEDREAM, SYNC, TWO_BW, VARIANTS as ALL_VARIANTS, Delay

from . import plotting
from ..records.cache import Cache
from ..records.deps import Deps
from ..records.profiles import Profile
from ..records.runs import Outcome, Runner
from ..records.machine_regimes import machine_kind, regime_of
from ..statistics.seed_stats import EMPTY_MODEL, Measured, Noise, NoiseModel, paired
from ..statistics.verdicts import Verdict, gate, mean

LOSS_LABEL = "validation loss (nats/byte)"
GAP_LABEL = "final sync-async gap (nats/byte)"


@dataclass
class FigureOutput:
    """One figure's or table's entry in the report.

    ``status``: "done", "partial" (some runs missing, listed in ``missing``),
    "not run in this profile", or "not available: <why>".
    """

    name: str
    title: str
    status: str = "done"
    caption: str = ""
    files: list = field(default_factory=list)
    paper: list = field(default_factory=list)
    measured: list = field(default_factory=list)
    verdicts: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    missing: list = field(default_factory=list)
    runs: list = field(default_factory=list)  # the Outcome of every run behind it (the report lists them)
    highlights: list = field(default_factory=list)  # one sentence each, shown on the front page with the figure


@dataclass
class Context:
    """Everything a figure renders from."""

    profile: Profile
    out: Path
    runner: Runner
    deps: Deps
    cache: Cache
    noise: NoiseModel = EMPTY_MODEL   # pooled seed spreads (paper_figs.pipeline.pooled_noise), set before any figure

    def get(self, settings: dict) -> Outcome:
        """The outcome of a run the pipeline already resolved (never trains: an unknown run
        is looked up in the cache and the kept records, else reported missing)."""
        return self.runner.run_all([settings], train=False)[0]

    def noise_for(self, optimizer: str, config: str | None = None, lr=1.0) -> Noise:
        """The seed spread a cell of ``optimizer`` on ``config`` (default: the main size) at
        peak lr ``lr`` x preset (or (sync, delayed) multipliers) borrows."""
        return self.noise.for_cell(optimizer, config or self.profile.main_size, lr)

    def verdict(self, v: Verdict) -> Verdict:
        return gate(v, self.profile.verdicts_meaningful)

    @property
    def fig_dir(self) -> Path:
        return self.out / "figures"


def spec_of(profile: Profile, figure: str, table: dict) -> Any:
    """A figure's knobs in ``profile``: the row of ``table`` ({profile name: frozen spec})
    named by ``profile.name``, else the full profile's row (a new profile is one entry in
    ``paper_figs/records/profiles.py``; a figure names it only where its knobs differ), with
    ``profile.grid_changes[figure]`` ({field: value}) applied."""
    row = table.get(profile.name, table["full"])
    return dataclasses.replace(row, **profile.grid_changes.get(figure, {}))


@dataclass(frozen=True)
class TunedReading:
    """A figure module registered a second time, with the parameter ``tuned=True``: the same
    figure with every run at its optimizer's tuned sync lr (``paper_figs.figures.tuned_lrs``).
    ``NAME`` and ``TITLE`` are the module's ``TUNED_NAME`` and ``TUNED_TITLE``."""

    module: Any

    @property
    def NAME(self) -> str:  # noqa: N802 (the catalog's interface: a figure module's NAME)
        return self.module.TUNED_NAME

    @property
    def TITLE(self) -> str:  # noqa: N802
        return self.module.TUNED_TITLE

    def grid(self, profile: Profile) -> dict:
        return self.module.grid(profile, tuned=True)

    def build(self, ctx: "Context") -> "FigureOutput":
        return self.module.build(ctx, tuned=True)


VARIANTS = ONE_STEP   # sync, 2bw, ef: the paper's one-step-delay comparison (lmo.variants)
#: the delayed run with one of the paper's staleness mitigations (fractions of the profile's steps):
#: lmo.variants.MITIGATIONS, the fields of lmo.variants.Delay
MITIGATION_KINDS = MITIGATIONS


def variant(profile: Profile, optimizer: str, kind: str, at: Any = None, **extra: Any) -> dict:
    """Settings of one run of ``optimizer`` in variant ``kind``.

    kinds: the variants of ``lmo.variants`` (sync, 2bw, ef, pipedream) and
    :data:`MITIGATION_KINDS` (sync_start, sync_cooldown, dc_asgd: the delayed run with that
    mitigation). ``at`` is the kind's own setting, given by the figure that runs it:
    PipeDream's stage count P, sync start's / cool-down's fraction w of the steps
    (``sync_start = max(1, round(w x steps))``), DC-ASGD's lambda.
    """
    s = profile.settings(optimizer=optimizer, **extra)
    steps = int(s["steps"])
    if kind in ALL_VARIANTS:
        fields = Delay(kind).config_fields
        s.update(mode=fields["mode"])
        if fields["ef"]:
            s.update(ef=True)           # sync / 2bw settings carry no ef key: their cache keys stay
        if kind == PIPEDREAM:
            s.update(stages=_setting(kind, at))
    elif kind == "sync_start":
        s.update(mode=TWO_BW, sync_start=max(1, round(_setting(kind, at) * steps)))
    elif kind == "sync_cooldown":
        s.update(mode=TWO_BW, sync_cooldown=max(1, round(_setting(kind, at) * steps)))
    elif kind == "dc_asgd":
        s.update(mode=TWO_BW, dc_asgd=_setting(kind, at))
    else:
        raise ValueError(f"kind: unknown variant {kind!r}; choose from {ALL_VARIANTS + MITIGATION_KINDS}")
    return s


def _setting(kind: str, at: Any) -> Any:
    if at is None:
        raise ValueError(f"at: variant {kind!r} needs its setting (stages, window fraction or lambda)")
    return at


def variant_grid(profile: Profile, kinds: Sequence[str], axes: dict, seeds: Sequence[int] | None = None,
                 at: dict | None = None, **fixed: Any) -> dict:
    """A figure's grid ``{(*axis values, kind): [settings per seed]}`` over the product of ``axes``.

    ``axes``: {setting name: values} (e.g. {"optimizer": opts, "steps": horizons}); the key
    lists the axis values in that order, then the variant kind. Each run is
    ``variant(profile, optimizer, kind, at[kind], seed=s, **other axis values, **fixed)``, the
    optimizer taken from ``axes`` or, for a one-optimizer figure, from ``fixed``;
    ``seeds`` default to the profile's, ``at`` {kind: its setting} (:func:`variant`).
    """
    seeds = profile.seeds if seeds is None else seeds
    at = at or {}
    fixed = dict(fixed)
    one_optimizer = fixed.pop("optimizer", None)
    if ("optimizer" in axes) == (one_optimizer is not None):
        raise ValueError("optimizer: give it either as an axis or as a fixed setting, once")
    grid = {}
    for values in itertools.product(*axes.values()):
        cell = dict(zip(axes, values))
        optimizer = cell.pop("optimizer", one_optimizer)
        for kind in kinds:
            grid[(*values, kind)] = [variant(profile, optimizer, kind, at.get(kind), seed=s, **cell, **fixed)
                                     for s in seeds]
    return grid


def lr_mult(settings: dict) -> float:
    """A run's peak lr as a multiple of its optimizer's preset (``lmo.presets.DEFAULT_LR``)."""
    o = str(settings.get("optimizer"))
    return float(settings["lr"]) / DEFAULT_LR[o] if "lr" in settings and o in DEFAULT_LR else 1.0


def replicate_gaps(ctx: "Context", grids: Sequence[dict]) -> list[tuple]:
    """(optimizer, model config, (c_sync, c_kind) lr multipliers, per-seed gaps) of every cell
    with >= 2 seeds: for each key ``(*cell, kind)`` with kind 2bw or ef and a ``(*cell, "sync")``
    twin, the paired differences L_kind,s - L_sync,s. A group whose runs all belong to a
    larger group (the same runs reached through another figure) is counted once."""
    groups: dict = {}
    for g in grids:
        for key, ss in g.items():
            if key[-1] not in (TWO_BW, EF) or (*key[:-1], SYNC) not in g or len(ss) < 2:
                continue
            pairs = list(zip(g[(*key[:-1], SYNC)], ss))
            ids = frozenset(ctx.runner.key_of(a) + ctx.runner.key_of(b) for a, b in pairs)
            vals = []
            for a, b in pairs:
                oa, ob = ctx.get(a), ctx.get(b)
                if oa.ok and ob.ok and math.isfinite(oa.final) and math.isfinite(ob.final):
                    vals.append(ob.final - oa.final)
            lrs = (lr_mult(pairs[0][0]), lr_mult(pairs[0][1]))
            groups[ids] = (str(ss[0].get("optimizer")), str(ss[0].get("config")), lrs, vals)
    keep = [ids for ids in groups if not any(ids < other for other in groups)]
    return [groups[ids] for ids in keep if len(groups[ids][-1]) >= 2]


def runs_of(grid: dict) -> list[dict]:
    """Every settings of a figure's grid ``{cell: [settings per seed]}``, in order, each once
    (a run two readings share, e.g. Figure 4's preset-lr run in its lr grid, is listed once)."""
    out = []
    for s in (s for ss in grid.values() for s in ss):
        if s not in out:
            out.append(s)
    return out


def figure_runs(mod, profile: Profile) -> list[dict]:
    """The runs figure module ``mod`` needs: its grid flattened, or its ``runs(profile)``."""
    grid = getattr(mod, "grid", None)
    return runs_of(grid(profile)) if grid is not None else list(mod.runs(profile))


def measure(ctx: Context, grid: dict, missing: list) -> dict:
    """{cell: [final val loss per seed]} of a grid; missing runs are nan, their reasons in ``missing``."""
    return {cell: finals(ctx, ss, missing) for cell, ss in grid.items()}


def measure_cells(ctx: Context, out: FigureOutput, grid: dict) -> dict | None:
    """``{cell: {kind: [final val loss per seed]}}`` of a grid keyed ``(*cell, kind)`` (a
    one-element cell unwrapped); sets ``out.missing`` and ``out.status``. None when no run
    is available (the figure then returns ``out`` as it is)."""
    flat = measure(ctx, grid, out.missing)
    out.status = status_of(out.missing, sum(map(len, grid.values())))
    if out.status.startswith("not available"):
        return None
    res: dict = {}
    for key, vals in flat.items():
        res.setdefault(key[0] if len(key) == 2 else key[:-1], {})[key[-1]] = vals
    return res


def at_tuned_lr(verdicts: dict) -> dict:
    """A figure's verdicts renamed for its reading at the tuned sync lrs: the claim's first
    parenthesis (or its end) gets ", at the tuned sync lr", so the two readings never share a name."""
    return {(k.replace(" (", ", at the tuned sync lr (", 1) if " (" in k else k + ", at the tuned sync lr"): v
            for k, v in verdicts.items()}


def grid_figure(name: str, title: str, grid: Callable[[Profile], dict],
                render: Callable[[Context, FigureOutput, dict, dict], FigureOutput]) -> "Builder":
    """``build(ctx)`` of a figure that trains: ``out = FigureOutput(name, title)``, the
    grid ``g = grid(profile)`` measured by :func:`measure_cells` into ``res``, then
    ``render(ctx, out, g, res)`` draws and judges it (not called when no run is available)."""
    def build(ctx: Context) -> FigureOutput:
        out = FigureOutput(name, title)
        g = grid(ctx.profile)
        res = measure_cells(ctx, out, g)
        return out if res is None else render(ctx, out, g, res)
    return build


def cell_sources(ctx: Context, grid: dict, cell, kinds: Sequence[str]) -> str:
    """:func:`sources` of every run of one cell of a grid, over ``kinds``."""
    key = cell if isinstance(cell, tuple) else (cell,)
    return sources(ctx, [s for k in kinds for s in grid[(*key, k)]])


def curve_panel(ctx: Context, ax, grid: dict, cell, kinds: Sequence[str], title: str) -> None:
    """One panel of validation curves, one per variant kind of ``cell``, y cut to the
    post-transient range (plotting.focus_ylim)."""
    key = cell if isinstance(cell, tuple) else (cell,)
    shown = []
    for k in kinds:
        cs = curves(ctx, grid[(*key, k)])
        plotting.plot_curves(ax, cs, plotting.VARIANT_STYLE[k])
        shown += cs
    plotting.focus_ylim(ax, shown)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(plotting.STEP_LABEL)
    ax.set_ylabel(LOSS_LABEL)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def curves(ctx: Context, settings_list: list) -> list[tuple[list, list]]:
    """The validation curves of the runs that exist."""
    return [o.curve() for o in (ctx.get(s) for s in settings_list) if o.ok]


def sources(ctx: Context, settings_list: list) -> str:
    """Where a cell's numbers come from: 'live', 'kept', 'cache' or a mix ('live+kept')."""
    tags = []
    for s in settings_list:
        o = ctx.get(s)
        tag = o.source if o.ok else "missing"
        if tag not in tags:
            tags.append(tag)
    return "+".join(tags) or "-"


def finals(ctx: Context, settings_list: list, missing: list) -> list[float]:
    """Final val losses of the runs that exist, each a :class:`Measured` that knows its run's
    key, machine kind and regime (docs/protocol.md §7); the others' reasons go to ``missing``."""
    vals = []
    for s in settings_list:
        o = ctx.get(s)
        if o.ok and math.isfinite(o.final):
            prov = (getattr(o, "record", None) or {}).get("provenance") or {}
            vals.append(Measured(o.final, getattr(o, "key", None), machine_kind(prov) if prov else None,
                                 regime_of(s)))
        else:
            why = o.error or "final validation loss is not finite"
            missing.append(f"{describe_run(s)}: {why}")
            vals.append(float("nan"))
    return vals


def describe_run(s: dict) -> str:
    from ..records.runs import describe
    return describe(s)


def status_of(missing: list, total: int) -> str:
    if not missing:
        return "done"
    if len(missing) >= total:
        reasons = sorted({m.split(": ", 1)[-1] for m in missing})
        return "not available: " + "; ".join(reasons[:3])
    return "partial"


Builder = Callable[[Context], FigureOutput]


def tag(v: Verdict, claim: str) -> Verdict:
    """``v`` as the confirmatory line ``claim`` of ``paper_figs.statistics.protocol.FAMILY``."""
    return dataclasses.replace(v, claim=claim)


def grid_claims(ctx: Context, grid: Callable[[Profile], dict],
                judge: Callable[[Context, dict], dict]) -> dict[str, Verdict]:
    """The confirmatory lines (those tagged with a claim id) of a grid figure's ``judge(ctx,
    res)``, measured without drawing: how ``paper_figs.report.confirmatory`` reads every figure of the
    family, whichever figures an invocation shows."""
    res = measure_cells(ctx, FigureOutput("", ""), grid(ctx.profile))
    return {} if res is None else {k: v for k, v in judge(ctx, res).items() if v.claim}


def best_lr(cells: dict, kind: str) -> float:
    """c_v = argmin_c mean_seeds L_v(c) over ``cells`` {c: {variant: per-seed losses}} (a
    failed run, nan, never wins)."""
    return min(cells, key=lambda c: (lambda x: x if x == x else float("inf"))(mean(cells[c][kind])))


def retuned_gap(cells: dict) -> tuple[list, float, float]:
    """(per-seed gap*, c_sync, c_2bw) over ``cells`` {c: {variant: per-seed losses}}:
    gap* = L_2bw(c_2bw) - L_sync(c_sync), each variant at its own :func:`best_lr` (Figure 4's
    and lr_tuning's lr-retuned protocol)."""
    c_s, c_a = best_lr(cells, SYNC), best_lr(cells, TWO_BW)
    return paired(cells[c_s][SYNC], cells[c_a][TWO_BW]), c_s, c_a


def relative_gap(cell: dict) -> str:
    """mean(L_async - L_sync) / mean(L_sync) of a cell, in percent: the unit-free size of the
    delay penalty, comparable with the paper's (e.g. 360M AdamW 0.278 / 2.612 = 10.6 %)."""
    g, s = paired(cell["sync"], cell["2bw"]), [x for x in cell["sync"] if math.isfinite(x)]
    if not g or not s:
        return "n/a"
    return f"{sum(g) / len(g) / (sum(s) / len(s)):.2%}"


def recovered(cell: dict, mitigated) -> float:
    """(L_2bw - L_m) / (L_2bw - L_sync) of the seed means: the fraction of a cell's sync-async
    gap that the mitigated runs ``mitigated`` recover (Table 2's number; nan without a gap)."""
    s, a, m = mean(cell[SYNC]), mean(cell[TWO_BW]), mean(mitigated)
    return (a - m) / (a - s) if math.isfinite(a - s) and a != s else float("nan")


def pct(x: float) -> str:
    return f"{x:.0%}" if math.isfinite(x) else "n/a"
