"""The main job: train or look up what the selected figures need, render, report.

Each run a figure needs is either trained live (through the cache: a killed invocation
resumes from it) or, where the profile says so, read from the cache or the kept records
(:mod:`paper_figs.records.kept`); ``force`` retrains every run, kept ones included, and reruns
the external calls.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable, Collection, Sequence

from .report import confirmatory
from .statistics import machine_noise
from .records.cache import Cache
from .records.deps import Deps
from .figures import CATALOG, fig5, plotting
from .figures.common import Context, FigureOutput, figure_runs, replicate_gaps
from .records.kept import KeptStore
from .records.plan import through
from .records.profiles import Profile
from .report.markdown import source_counts, write_report
from .report.runs_table import write_runs_csv
from .records.runs import Runner, disk_error
from .statistics.seed_stats import NoiseModel, noise_model


def select(only: Sequence[str] | None) -> list[str]:
    """Figure names in report order; ``only`` restricts them (unknown names fail loudly)."""
    if not only:
        return list(CATALOG)
    bad = [n for n in only if n not in CATALOG]
    if bad:
        raise ValueError(f"only: unknown figure(s) {bad}; known: {list(CATALOG)}")
    return [n for n in CATALOG if n in only]


def split_runs(profile: Profile, names: Sequence[str], force: bool = False,
               read_instead: Callable[[dict], bool] | None = None) -> dict[str, dict]:
    """{figure: {"live": [settings], "kept": [settings]}} for the figures ``names`` the
    profile shows; with ``force`` every run is live. ``read_instead`` (``--reuse-kept``: the
    run has a kept record; ``--plan-only``: it is not the plan batch's): a run the profile
    would train live is read instead (kept, cached or missing) when ``read_instead(settings)``."""
    out = {}
    for n in names:
        if not profile.runs_figure(n):
            continue
        runs = figure_runs(CATALOG[n], profile)
        live = [s for s in runs if force or profile.trains_live(n, s)]
        kept = [s for s in runs if not (force or profile.trains_live(n, s))]
        if read_instead is not None:
            have = [s for s in live if read_instead(s)]
            live, kept = [s for s in live if s not in have], kept + have
        out[n] = {"live": live, "kept": kept}
    return out


def read_instead(has_record: Callable[[dict], bool] | None, train_only: Collection[str] | None,
                 key_of: Callable[[dict], str]) -> Callable[[dict], bool] | None:
    """The rule :func:`split_runs` reads a live run by instead of training it: it has a record
    (``has_record``, ``--reuse-kept``) or its key is not in ``train_only`` (``--plan-only``)."""
    if has_record is None and train_only is None:
        return None
    keys = None if train_only is None else set(train_only)
    return lambda s: (has_record is not None and has_record(s)) or (keys is not None and key_of(s) not in keys)


def run_counts(name: str, figures: list, live: list, looked_up: list, key_of) -> str:
    """The console line that counts the runs: distinct runs (by key, as the kept records and
    the README count them), not their uses by the figures (figures share runs: Figure 3's
    seed-0 runs appear in Table 1, lr_tuning, ...)."""
    def keys(runs):
        out = set()
        for s in runs:
            try:
                out.add(key_of(s))
            except Exception:  # noqa: BLE001 - a run the trainer refuses: counted alone (reported later)
                out.add(repr(sorted(s.items())))
        return out
    trained, other = keys(live), keys(looked_up)
    return (f"[paper_figs] profile {name}: figures {figures}; {len(trained)} run(s) to train live, "
            f"{len(other - trained)} more read from the cache or kept records ({len(trained | other)} distinct "
            f"runs, {len(live) + len(looked_up)} uses over the figures)")


def pooled_noise(ctx: Context, names: Sequence[str] = tuple(CATALOG)) -> NoiseModel:
    """The seed SDs of a paired difference pooled over the multi-seed cells of the figures
    ``names`` (default: every figure the profile runs, so that a figure's verdicts do not
    depend on which others ``--only`` asked for; runs not trained here are read from the
    cache and the kept records, and a missing one is left out), per optimizer, model and lr
    and coarser (:class:`paper_figs.statistics.seed_stats.NoiseModel`; :func:`paper_figs.figures.common.replicate_gaps`):
    what cells with fewer than 3 seeds borrow."""
    grids = [CATALOG[n].grid(ctx.profile) for n in names
             if ctx.profile.runs_figure(n) and hasattr(CATALOG[n], "grid")]
    return noise_model(replicate_gaps(ctx, grids), machine=machine_noise.load())


def family(ctx: Context) -> dict:
    """The confirmatory family decided with Holm (``paper_figs.report.confirmatory``), over every
    figure of the profile whichever ones ``--only`` asked for, at the sequential plan's current
    look: the families at the earlier looks (the profile through each earlier batch, from the
    same runs) give each claim its sequential p-value (docs/plan.md §3)."""
    earlier = []
    for j in range(ctx.profile.plan_batch):
        cj = Context(through(ctx.profile, j), ctx.out, ctx.runner, ctx.deps, ctx.cache)
        cj.noise = pooled_noise(cj)
        earlier.append(confirmatory.judge_family(cj))
    return confirmatory.decide(confirmatory.judge_family(ctx), ctx.profile.verdicts_meaningful, earlier=earlier)


def planning(profile: Profile, log) -> tuple[dict | None, dict | None]:
    """What the first screen says of the undecided claims: per claim the seeds and CPU hours its
    decision needs (``paper_figs.seeds_needed`` on the kept records through the plan's current
    batch), and the claims a later batch of the plan feeds ({claim: that batch}). (None, None)
    for a profile whose verdicts mean nothing or that has no plan."""
    if not profile.verdicts_meaningful or profile.name not in ("full", "quick"):
        return None, None
    from .error_rates import design
    from .records.plan import BATCHES
    from .seeds_needed import rows
    waiting: dict = {}
    for b in BATCHES[profile.plan_batch:]:
        for c in b.claims:
            waiting.setdefault(c, b.id)
    try:
        needs = {r["claim"]: r for r in rows(design(profile))}
    except (ValueError, KeyError) as e:   # a design with a cell that has no spread at all
        log(f"[paper_figs] seeds needed: not computed ({e})")
        needs = None
    return needs, waiting


def run_profile(profile: Profile, out: str | Path = "figs_out", *, only: Sequence[str] | None = None,
                force: bool = False, deps: Deps | None = None, progress: bool = True,
                log: Callable[[str], None] | None = None, kept: KeptStore | None = None,
                reuse_kept: bool = False, train_only: Collection[str] | None = None) -> dict:
    """Run ``profile``; returns ``{"report": path, "outputs": [FigureOutput], "runner": Runner}``.

    Figures the profile leaves out are reported as "not run in this profile". Each figure's
    failure is contained: its entry says why, the others still render. ``kept``: the kept
    records (default: ``paper_figs/kept/``). ``reuse_kept``: a run the profile would train
    live is read from its kept record when it has one (to extend a profile's grid: only the
    new runs train). ``train_only``: run keys; every other run is read, not trained
    (``--plan-only``: the plan batch's runs).
    """
    t0 = time.time()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    deps = deps or Deps()
    log = log or (lambda s: print(s, file=sys.stderr, flush=True))
    cache = Cache(out / "cache")
    runner = Runner(deps, cache, jobs=profile.jobs, threads=profile.threads_per_job, force=force,
                    progress=progress, log=log, kept=kept if kept is not None else KeptStore(),
                    command=f"python -m paper_figs --profile {profile.name}")
    ctx = Context(profile, out, runner, deps, cache)
    names = select(only)
    split = split_runs(profile, names, force, read_instead=read_instead(
        (lambda s: runner.kept.get(runner.key_of(s)) is not None) if reuse_kept else None, train_only, runner.key_of))
    live = [s for v in split.values() for s in v["live"]]
    from_kept = [s for v in split.values() for s in v["kept"]]
    log(run_counts(profile.name, list(split), live, from_kept, runner.key_of))
    runner.run_all(live)
    looked_up = runner.run_all(from_kept, train=False)
    ctx.noise = pooled_noise(ctx)
    log(f"[paper_figs] {ctx.noise}")
    if looked_up:
        count = source_counts(looked_up)
        log(f"[paper_figs] not trained here: {count['kept']} from kept records, {count['cache']} from "
            f"the cache, {count['live']} trained live for another figure, {count['missing']} missing")
    outputs = []
    for n in names:
        mod = CATALOG[n]
        if n not in split:
            outputs.append(FigureOutput(n, mod.TITLE, status="not run in this profile"))
            continue
        try:
            o = mod.build(ctx)
        except Exception as e:  # one broken figure must not hide the others; a failed write stops the job
            if disk_error(e):
                raise
            import traceback
            log(traceback.format_exc(limit=4))
            o = FigureOutput(n, mod.TITLE, status=f"not available: rendering failed: {type(e).__name__}: {e}")
        o.runs = [ctx.get(s) for s in split[n]["live"] + split[n]["kept"]]
        log(f"[paper_figs] {n}: {o.status}")
        outputs.append(o)
    for stem, found in plotting.DEFECTS.items():
        if found:
            log(f"[paper_figs] layout of {stem}: " + "; ".join(found))
    final = family(ctx)
    confirmatory.apply(outputs, final)
    hgaps = fig5.horizon_gaps(ctx) if profile.runs_figure(fig5.NAME) else {}
    head = confirmatory.headline(hgaps) if hgaps else ""
    c1 = confirmatory.c1_at_longest_horizon(hgaps)
    needs, waiting = planning(profile, log) if not deps.overrides else (None, None)
    path = write_report(out, profile, outputs, trained=runner.trained, overridden=sorted(deps.overrides),
                        elapsed_s=time.time() - t0, noise=ctx.noise, family=final, headline=head,
                        needs=needs, waiting=waiting, notes={"C1": c1} if c1 else None)
    runs_csv, curves_csv = write_runs_csv(out, outputs)
    log(f"[paper_figs] report: {path} (every run used: {runs_csv}, their curves: {curves_csv})")
    return {"report": path, "outputs": outputs, "runner": runner}
