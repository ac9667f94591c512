"""The main job: train what the selected figures need (through the cache), render, report."""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable, Sequence

from .cache import Cache
from .deps import Deps
from .figures import CATALOG
from .figures.common import Context, FigureOutput
from .profiles import Profile
from .report import write_report
from .runs import Runner


def select(only: Sequence[str] | None) -> list[str]:
    """Figure names in report order; ``only`` restricts them (unknown names fail loudly)."""
    if not only:
        return list(CATALOG)
    bad = [n for n in only if n not in CATALOG]
    if bad:
        raise ValueError(f"only: unknown figure(s) {bad}; known: {list(CATALOG)}")
    return [n for n in CATALOG if n in only]


def run_profile(profile: Profile, out: str | Path = "figs_out", *, only: Sequence[str] | None = None,
                force: bool = False, deps: Deps | None = None, progress: bool = True,
                log: Callable[[str], None] | None = None) -> dict:
    """Run ``profile``; returns ``{"report": path, "outputs": [FigureOutput], "runner": Runner}``.

    Figures the profile leaves out are reported as "not run in this profile". Each figure's
    failure is contained: its entry says why, the others still render.
    """
    t0 = time.time()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    deps = deps or Deps()
    log = log or (lambda s: print(s, file=sys.stderr, flush=True))
    cache = Cache(out / "cache")
    runner = Runner(deps, cache, jobs=profile.jobs, threads=profile.threads_per_job, force=force,
                    progress=progress, log=log)
    ctx = Context(profile, out, runner, deps, cache)
    names = select(only)
    active = [n for n in names if profile.runs_figure(n)]
    wanted = [s for n in active for s in CATALOG[n].runs(profile)]
    log(f"[paper_figs] profile {profile.name}: figures {active}; {len(wanted)} run slots")
    runner.run_all(wanted)
    outputs = []
    for n in names:
        mod = CATALOG[n]
        if n not in active:
            outputs.append(FigureOutput(n, mod.TITLE, status="not run in this profile"))
            continue
        try:
            o = mod.build(ctx)
        except Exception as e:  # one broken figure must not hide the others
            import traceback
            log(traceback.format_exc(limit=4))
            o = FigureOutput(n, mod.TITLE, status=f"not available: rendering failed: {type(e).__name__}: {e}")
        log(f"[paper_figs] {n}: {o.status}")
        outputs.append(o)
    path = write_report(out, profile, outputs, trained=runner.trained, overridden=sorted(deps.overrides),
                        elapsed_s=time.time() - t0)
    log(f"[paper_figs] report: {path}")
    return {"report": path, "outputs": outputs, "runner": runner}
