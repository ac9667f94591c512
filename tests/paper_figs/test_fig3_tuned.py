"""Figure 3 at the tuned sync lr (``fig3.grid(p, tuned=True)``, the catalog's fig3_tuned): every run at
c_sync x preset, the runs it shares with lr_tuning, and its verdicts named apart from Figure 3's."""
from __future__ import annotations

from paper_figs_fakes import StubContext

from lmo.presets import DEFAULT_LR, DEFAULT_MOMENTUM
from paper_figs.records.identity import run_key
from paper_figs.records.deps import Deps
from paper_figs.figures import fig3, lr_tuning
from paper_figs.figures.common import FigureOutput, runs_of
from paper_figs.figures.grids import shared
from paper_figs.records.profiles import PROFILES, get_profile
from paper_figs.records.runs import full_config
from paper_figs.figures.tuned_lrs import chosen


def _key(s):
    return run_key(full_config(Deps().TrainConfig, s))


def test_every_run_at_the_chosen_sync_lr_and_the_sync_runs_are_lr_tunings():
    p = PROFILES["full"]
    g, plain, tune = fig3.grid(p, tuned=True), fig3.grid(p), lr_tuning.grid(p)
    assert set(g) == set(plain)
    for (o, kind), runs in g.items():
        lr = round(chosen(o, "sync") * DEFAULT_LR[o], 12)
        assert [s["lr"] for s in runs] == [lr] * len(shared(p).seeds_main), (o, kind)
        same = [{k: v for k, v in s.items() if k not in ("lr", "momentum")} for s in runs]
        assert same == [{k: v for k, v in s.items() if k != "lr"} for s in plain[(o, kind)]]
        assert all(s.get("momentum", DEFAULT_MOMENTUM[o]) == DEFAULT_MOMENTUM[o] for s in runs)
    tune_keys = {_key(s) for s in runs_of(tune)}
    for o in fig3.OPTIMIZERS:
        assert {_key(s) for s in g[(o, "sync")]} <= tune_keys   # seed 0: the grid; 1-3: held out
    new = {_key(s) for s in runs_of(g)} - tune_keys
    # AdamW's 2BW (its chosen 2BW lr is x1, not its sync lr x4) and both optimizers' EF, 4 seeds
    assert len(new) == 3 + 2 * len(shared(p).seeds_main) == 11


def test_verdicts_are_figure3s_named_at_the_tuned_lr(tmp_path, monkeypatch):
    """Planted finals: the verdicts are fig3.judge's, under names that say the lr, and the
    caption names each optimizer's lr."""
    from paper_figs.figures.best_lrs import Argmin
    monkeypatch.setattr(fig3, "sync_argmin", lambda ctx, o: Argmin(2.0, 4.0, "", True, f"{o}: planted interior"))
    monkeypatch.setattr(fig3, "curve_panel", lambda *a, **k: None)     # the stub context has no curves
    monkeypatch.setattr(fig3, "cell_sources", lambda *a, **k: "planted")
    p = get_profile("micro")
    res = {"adamw": {"sync": [1.40, 1.41, 1.42], "2bw": [1.60, 1.61, 1.62], "ef": [1.42, 1.43, 1.44]},
           "muon": {"sync": [1.36, 1.37, 1.38], "2bw": [1.37, 1.38, 1.39], "ef": [1.36, 1.37, 1.38]}}
    out = fig3._render_tuned(StubContext(p, tmp_path), FigureOutput(fig3.TUNED_NAME, "t"), fig3.grid(p, tuned=True),
                             res)
    judged = fig3.judge(res, {o: StubContext().noise_for(o) for o in res})
    assert {k: v.status for k, v in out.verdicts.items()} == {
        k.replace(" (", ", at the tuned sync lr (", 1): v.status for k, v in judged.items()}
    assert "AdamW peak lr x4 preset; Muon peak lr x0.5 preset" in out.caption
    assert (tmp_path / "fig3_tuned_sync_vs_delay.png").exists()


def test_a_tuned_lr_at_the_grid_edge_leaves_every_verdict_inconclusive(tmp_path, monkeypatch):
    """docs/protocol.md §6: Figure 3 at a tuned lr rests on that lr being the grid's resolved,
    interior best; an edge (Muon's x0.5) leaves every line inconclusive, saying why."""
    from paper_figs.figures.best_lrs import Argmin
    monkeypatch.setattr(fig3, "curve_panel", lambda *a, **k: None)
    monkeypatch.setattr(fig3, "cell_sources", lambda *a, **k: "planted")
    monkeypatch.setattr(fig3, "sync_argmin", lambda ctx, o: Argmin(
        0.5 if o == "muon" else 4.0, 1.0, "lowest" if o == "muon" else "", True, f"{o}: planted"))
    p = get_profile("micro")
    res = {"adamw": {"sync": [1.40, 1.41, 1.42], "2bw": [1.60, 1.61, 1.62], "ef": [1.42, 1.43, 1.44]},
           "muon": {"sync": [1.36, 1.37, 1.38], "2bw": [1.37, 1.38, 1.39], "ef": [1.36, 1.37, 1.38]}}
    out = fig3._render_tuned(StubContext(p, tmp_path), FigureOutput(fig3.TUNED_NAME, "t"), fig3.grid(p, tuned=True),
                             res)
    assert {v.status for v in out.verdicts.values()} == {"inconclusive"}
    assert all("grid edge" in v.reason and "muon: planted" in v.reason for v in out.verdicts.values())
