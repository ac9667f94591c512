"""Figure 2's sensitivity reading (``fig2_table2.sweep_grid``, ``fig2_table2.render_sweep``): which runs it adds,
that each setting reaches its run, and that its verdict can fail."""
from __future__ import annotations

from paper_figs_fakes import StubContext

from paper_figs.records.identity import run_key
from paper_figs.records.deps import Deps
from paper_figs.figures import fig2_table2
from paper_figs.figures.common import FigureOutput, runs_of
from paper_figs.pipeline import select, split_runs
from paper_figs.records.profiles import PROFILES, get_profile, with_grid
from paper_figs.records.runs import full_config
from paper_figs.statistics.verdicts import FAILS, HOLDS, INCONCLUSIVE


def _key(s):
    return run_key(full_config(Deps().TrainConfig, s))


def _all_runs(p):
    return {_key(s) for runs in split_runs(p, select(None)).values() for s in runs["live"]}


def test_sweep_shares_figure2s_setting_and_its_base_and_adds_the_others():
    p = PROFILES["full"]
    f2 = fig2_table2.spec(p)
    sweep = fig2_table2.sweep_grid(p)
    no_sweep = with_grid(get_profile("full"), "fig2_table2", mitigation_sweep_optimizers=())
    plain = {_key(s) for s in runs_of(fig2_table2.grid(no_sweep))}
    others = _all_runs(no_sweep)
    for o in f2.mitigation_sweep_optimizers:
        fig2_seed0 = {_key(s) for s in sweep[(fig2_table2.SWEEP, o, f2.sync_start_frac, "sync_start")]}
        assert len(fig2_seed0 & plain) == 1 and len(fig2_seed0) == len(f2.sweep_seeds) == 3
        for kind in ("sync", "2bw", "ef"):   # Table 1's and Figure 3's runs of the sweep's seeds
            base = sweep[(fig2_table2.SWEEP, o, fig2_table2.BASE, kind)]
            assert [s["seed"] for s in base] == list(f2.sweep_seeds) and {_key(s) for s in base} <= others
    new = {_key(s) for s in runs_of(sweep)} - others
    per_opt = 2 * len(f2.window_grid) + len(f2.dc_asgd_grid)
    # Figure 2's own three settings at seed 0 are its runs; everything else is the sweep's
    assert len(new) == len(f2.mitigation_sweep_optimizers) * (per_opt * len(f2.sweep_seeds) - 3) == 54


def test_each_setting_reaches_its_run():
    p = PROFILES["full"]
    g = fig2_table2.sweep_grid(p)
    s = g[(fig2_table2.SWEEP, "adamw", 0.2, "sync_start")][0]
    assert s["mode"] == "2bw" and s["sync_start"] == round(0.2 * p.steps)
    s = g[(fig2_table2.SWEEP, "muon", 0.05, "sync_cooldown")][0]
    assert s["sync_cooldown"] == round(0.05 * p.steps) and "sync_start" not in s
    assert g[(fig2_table2.SWEEP, "adamw", 1000.0, "dc_asgd")][0]["dc_asgd"] == 1000.0


def _judge(tmp_path, sweep_loss):
    """Verdicts of a planted sweep: gap 0.10 (sync 1.40, 2BW 1.50), every mitigation at
    every setting ending at ``sweep_loss(kind, value)``."""
    p = with_grid(get_profile("micro"), "fig2_table2", mitigation_sweep_optimizers=("adamw",),
                  window_grid=(0.1, 0.2), dc_asgd_grid=(0.04, 1000.0))
    res = {(fig2_table2.SWEEP, "adamw", fig2_table2.BASE): {"sync": [1.40], "2bw": [1.50], "ef": [1.41]}}
    for kind, (_, values) in fig2_table2.SETTING.items():
        for v in getattr(fig2_table2.spec(p), values):
            res.setdefault((fig2_table2.SWEEP, "adamw", v), {})[kind] = [sweep_loss(kind, v)]
    out = FigureOutput("fig2_table2", "t")
    fig2_table2.render_sweep(StubContext(p, tmp_path), out, res)
    return {k.split(":")[0]: v.status for k, v in out.verdicts.items()}, out


def test_limited_holds_when_no_setting_recovers_and_fails_when_one_does(tmp_path):
    none, out = _judge(tmp_path, lambda kind, v: 1.50)
    assert set(none.values()) == {HOLDS} and len(none) == 3
    assert (tmp_path / "fig2_mitigation_sweep.png").exists()
    assert any("0.2: 1.500 (0%)" in r for r in out.measured)
    # DC-ASGD at lambda 1000 recovers 90 %: its line fails, the windows' lines still hold
    one, _ = _judge(tmp_path, lambda kind, v: 1.41 if (kind, v) == ("dc_asgd", 1000.0) else 1.50)
    assert one["delay + DC-ASGD"] == FAILS
    assert one["delay + synchronous start"] == one["delay + synchronous cool-down"] == HOLDS
    # inside the noise at every setting: nothing is resolved
    noisy, _ = _judge(tmp_path, lambda kind, v: 1.455)
    assert set(noisy.values()) == {INCONCLUSIVE}
