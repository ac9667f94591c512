"""Figure 2 at the tuned sync lr (``fig2_table2.grid(p, tuned=True)``, the catalog's fig2_tuned): every run at
c_sync x preset, the sync and 2BW runs lr_tuning's, the figure empty where the lrs were not
chosen, and its verdicts Figure 2's under names that say the lr."""
from __future__ import annotations

from paper_figs_fakes import StubContext

from lmo.presets import DEFAULT_LR, DEFAULT_MOMENTUM
from paper_figs.records.identity import run_key
from paper_figs.records.deps import Deps
from paper_figs.figures import fig2_table2, lr_tuning
from paper_figs.figures.common import FigureOutput, runs_of
from paper_figs.records.profiles import PROFILES, get_profile
from paper_figs.records.runs import full_config
from paper_figs.figures.tuned_lrs import chosen


def _key(s):
    return run_key(full_config(Deps().TrainConfig, s))


def test_every_run_at_the_chosen_sync_lr_and_sync_and_2bw_are_lr_tunings():
    p = PROFILES["full"]
    g, tune = fig2_table2.grid(p, tuned=True), lr_tuning.grid(p)
    plain = {k: v for k, v in fig2_table2.grid(p).items() if len(k) == 2}   # the sweep's cells aside
    assert set(g) == set(plain) and len(g) == 9 * 6
    for (o, kind), runs in g.items():
        lr = round(chosen(o, "sync") * DEFAULT_LR[o], 12)
        assert [s["lr"] for s in runs] == [lr] * len(p.seeds), (o, kind)
        same = [{k: v for k, v in s.items() if k not in ("lr", "momentum")} for s in runs]
        assert same == [{k: v for k, v in s.items() if k != "lr"} for s in plain[(o, kind)]], (o, kind)
        assert all(s.get("momentum", DEFAULT_MOMENTUM[o]) == DEFAULT_MOMENTUM[o] for s in runs)
    tune_keys = {_key(s) for s in runs_of(tune)}
    for o in fig2_table2.spec(p).mitigation_optimizers:
        assert {_key(s) for s in g[(o, "sync")] + g[(o, "2bw")]} <= tune_keys, o
    # the four mitigations (sync start, sync cool-down, DC-ASGD, EF) of nine optimizers, seed 0
    assert len({_key(s) for s in runs_of(g)} - tune_keys) == 9 * 4


def test_empty_where_the_mitigation_model_is_not_the_one_the_lrs_were_chosen_on(tmp_path):
    p = PROFILES["gpu"]
    assert fig2_table2.grid(p, tuned=True) == {}
    out = fig2_table2._render_tuned(StubContext(p, tmp_path), FigureOutput(fig2_table2.TUNED_NAME, "t"), {}, {})
    assert out.status == "not run in this profile" and not out.verdicts and "360m" in out.notes[-1]


def test_verdicts_are_figure2s_named_at_the_tuned_lr(tmp_path, monkeypatch):
    """Planted finals (EF recovers ~90 %, the other mitigations ~10 %): the verdicts are the
    ones fig2_table2.render gives the same numbers, in the same order, each named apart from
    Figure 2's, and the bars are drawn."""
    from paper_figs.figures.best_lrs import Argmin
    monkeypatch.setattr(fig2_table2, "sync_argmin", lambda ctx, o: Argmin(2.0, 4.0, "", True, f"{o}: planted interior"))
    monkeypatch.setattr(fig2_table2, "cell_sources", lambda *a, **k: "planted")
    p = get_profile("full")
    base = {"sync": [1.40], "2bw": [1.50], "ef": [1.41], "sync_start": [1.49], "sync_cooldown": [1.49],
            "dc_asgd": [1.49]}
    res = {o: dict(base) for o in fig2_table2.spec(p).mitigation_optimizers}
    g = fig2_table2.grid(p, tuned=True)
    out = fig2_table2._render_tuned(StubContext(p, tmp_path), FigureOutput(fig2_table2.TUNED_NAME, "t"), g, res)
    plain = fig2_table2.render(StubContext(p, tmp_path), FigureOutput("x", "t"), g, res, "plain", "preset")
    assert len(out.verdicts) == len(plain.verdicts) == 5
    assert not set(out.verdicts) & set(plain.verdicts)
    assert all("at the tuned sync lr" in k for k in out.verdicts)
    assert [v.status for v in out.verdicts.values()] == [v.status for v in plain.verdicts.values()]
    # planted: EF recovers ~90 % everywhere (so it does not hurt Adan and NAdam), the others ~10 %
    assert [v.status for v in plain.verdicts.values()] == ["holds", "holds", "holds", "does not hold", "holds"]
    assert (tmp_path / "fig2_tuned_mitigations.png").exists()
    assert "adamw x4, muon x0.5" in out.notes[-1]
