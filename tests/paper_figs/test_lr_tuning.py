"""The lr sweep (paper_figs/figures/lr_tuning.py): which runs it shares with Table 1 and
Figure 4 (same key: trained once), and how it picks the best lr."""
from __future__ import annotations

import pytest
from paper_figs_fakes import StubContext, knobs, profile_with

from lmo.presets import DEFAULT_LR

from paper_figs.records.identity import run_key
from paper_figs.records.deps import Deps
from paper_figs.figures import fig4, lr_tuning, table1
from paper_figs.figures.grids import tuning_mults
from paper_figs.figures.common import FigureOutput, best_lr, runs_of
from paper_figs.records.profiles import PROFILES, get_profile
from paper_figs.records.runs import full_config
from paper_figs.figures.tuned_lrs import chosen
from paper_figs.statistics.verdicts import FAILS, HOLDS, INCONCLUSIVE


def _key(s):
    return run_key(full_config(Deps().TrainConfig, s))


def test_sweep_shares_runs_with_table1_and_fig4():
    p = PROFILES["full"]
    g, t1, f4 = lr_tuning.grid(p), table1.grid(p), fig4.grid(p)
    f4_keys = {_key(s) for s in runs_of(f4)}
    for o in knobs(p).table1_optimizers:
        assert g[(lr_tuning.TUNE, o, 1.0, "sync")] == t1[(p.sizes[0], o, "sync")][:len(p.seeds)]
        shared = {_key(s) for s in g[(lr_tuning.TUNE, o, 2.0, "sync")]} <= f4_keys
        assert shared == (o in knobs(p).momentum_lr_optimizers), o
        at4 = o in knobs(p).momentum_lr_optimizers and 4.0 in fig4.lr_mults(p, o)   # Figure 4's grid extended to x4
        assert bool({_key(s) for s in g[(lr_tuning.TUNE, o, 4.0, "sync")]} & f4_keys) == at4, o
    new = {_key(s) for s in runs_of(g)} - f4_keys - {_key(s) for s in runs_of(t1)}
    # (x4 of AdamW and Lion, shared with Figure 4's extended grid, and Muon's x0.25, counted there)
    new |= {_key(s) for o in ("adamw", "lion") for k in ("sync", "2bw") for s in g[(lr_tuning.TUNE, o, 4.0, k)]}
    assert knobs(p).tuning_lr_mults == (0.5, 1.0, 2.0, 4.0, 8.0) and knobs(p).momentum_lr_mults == (0.5, 1.0, 2.0)
    assert knobs(p).tuned_gap_optimizers == knobs(p).table1_optimizers
    # sync and 2BW at x0.5, x2, x4, x8 of the six optimizers outside Figure 4's lr grid, and at
    # x4, x8 of the three in it (their x0.5 and x2 are Figure 4's; x1 is Table 1's everywhere);
    # x16 of Adan and MARS (best sync lr at x8, the grid's edge); x0.25 of MARS (best 2BW lr at x0.5);
    # Muon's x0.25 is Figure 4's extended grid's; the held-out seeds' runs
    assert dict(knobs(p).tuning_lr_extend) == {"adan": (16.0,), "mars": (0.25, 16.0), "muon": (0.25,)}
    held = {_key(s) for k, v in g.items() if k[0] in (lr_tuning.HELD, lr_tuning.ENDS) for s in v
            if s["seed"] not in p.seeds}
    assert len(new - held) == 2 * (4 * 6 + 2 * 3) + 2 * 2 + 2 * 1


def test_explicit_preset_momentum_is_the_same_training():
    """Figure 4's runs carry momentum = the preset; the optimizer they build equals the one
    built with momentum None (so sharing them is sharing the same training)."""
    from lmo.presets import DEFAULT_MOMENTUM
    from lmo.registry import make
    for o in knobs(PROFILES["full"]).momentum_lr_optimizers:
        a, b = make(o, 1e-3), make(o, 1e-3, DEFAULT_MOMENTUM[o])
        assert a.hyper == b.hyper, o


def test_best_is_the_argmin_and_never_a_failed_run():
    nan = float("nan")
    cells = {0.5: {"sync": [1.4]}, 1.0: {"sync": [1.3]}, 2.0: {"sync": [nan]}}
    assert best_lr(cells, "sync") == 1.0
    cells[0.5]["sync"] = [1.2]
    assert best_lr(cells, "sync") == 0.5


def test_no_sweep_no_runs():
    from paper_figs.records.profiles import get_profile
    assert lr_tuning.grid(profile_with("full", tuning_lr_mults=(1.0,))) == {}


def test_table1_at_tuned_lrs_judges_gap_star_not_the_preset_gap(tmp_path):
    """Planted: MARS's preset-lr gap is 0.40 but its gap* (best 2BW - best sync, both at x2, interior
    and resolved) is -0.01 < Muon's 0.01, so "MARS gap larger than Muon's" at tuned lrs does not
    hold; AdamW's gap* 0.25 against Muon's 0.01 holds, much larger too."""
    from paper_figs.figures.common import FigureOutput
    from paper_figs.records.profiles import get_profile
    from paper_figs.statistics.verdicts import FAILS, HOLDS
    p = profile_with("micro", table1_optimizers=("adamw", "muon", "mars"), tuning_lr_mults=(0.5, 1.0, 2.0, 4.0),
                     tuned_gap_optimizers=("adamw", "muon", "mars"))
    losses = {"adamw": {0.5: (1.60, 1.85), 1.0: (1.50, 1.70), 2.0: (1.40, 1.65), 4.0: (1.45, 1.70)},
              "muon": {0.5: (1.40, 1.42), 1.0: (1.36, 1.37), 2.0: (1.38, 1.40), 4.0: (1.42, 1.45)},
              "mars": {0.5: (1.60, 1.95), 1.0: (1.50, 1.90), 2.0: (1.45, 1.44), 4.0: (1.52, 1.50)}}
    res = _grid_res(p, losses)
    out = FigureOutput("lr_tuning", "t")
    lr_tuning._table1_tuned(StubContext(p, tmp_path), out, res)
    status = {k.split(" (")[0]: v.status for k, v in out.verdicts.items()}
    assert status == {"AdamW gap larger than Muon's": HOLDS, "AdamW gap much larger than Muon's": HOLDS,
                      "MARS gap larger than Muon's": FAILS, "MARS gap much larger than Muon's": FAILS}
    row = next(r for r in out.measured if r.startswith("| MARS"))
    assert "| x2 | x2 | 1.450 | 1.440 | -0.010 |" in row and row.endswith("| 0.400 |")
    assert (tmp_path / "lr_tuning_table1_gaps.png").exists()


def test_a_tuned_reading_that_rests_on_a_grid_edge_is_inconclusive(tmp_path):
    """docs/protocol.md §6 (changed on purpose): on a two-point grid every best lr is an edge of
    the grid, so no tuned-lr verdict can be given, whatever the numbers; the note names the
    extension that would make the edge interior."""
    p = profile_with("micro", table1_optimizers=("adamw", "muon"), tuning_lr_mults=(1.0, 2.0),
                     tuned_gap_optimizers=("adamw", "muon"))
    res = _grid_res(p, {"adamw": {1.0: (1.50, 1.70), 2.0: (1.40, 1.65)},
                        "muon": {1.0: (1.36, 1.37), 2.0: (1.38, 1.40)}})
    out = FigureOutput("lr_tuning", "t")
    lr_tuning._table1_tuned(StubContext(p, tmp_path), out, res)
    assert {v.status for v in out.verdicts.values()} == {INCONCLUSIVE}
    assert all("grid edge" in v.reason for v in out.verdicts.values())


def _grid_res(p, losses):
    """Planted one-seed lr grids {o: {c: (sync, 2bw)}}, x1 also Table 1's preset cell."""
    res = {}
    for o, by_c in losses.items():
        for c, (s, a) in by_c.items():
            res[(lr_tuning.TUNE, o, c)] = {"sync": [s], "2bw": [a]}
        res[(p.sizes[0], o)] = res[(lr_tuning.TUNE, o, 1.0)]
    return res


def test_grid_extends_upward_only_for_the_named_optimizers():
    p = PROFILES["full"]
    assert tuning_mults(p, "adan") == (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
    assert tuning_mults(p, "muon") == (0.25, *knobs(p).tuning_lr_mults)   # best lrs at x0.5: down to x0.25
    assert tuning_mults(p, "adamw") == knobs(p).tuning_lr_mults
    g = lr_tuning.grid(p)
    assert g[(lr_tuning.TUNE, "mars", 16.0, "2bw")][0]["lr"] == round(16 * DEFAULT_LR["mars"], 12)
    assert (lr_tuning.TUNE, "muon", 16.0, "sync") not in g


def test_held_out_runs_are_at_the_chosen_lrs_on_other_seeds():
    """Each headline optimizer's sync and 2BW at tuned_lrs.CHOSEN, seeds knobs(p).tuned_seeds; a chosen
    multiplier of 1 is Table 1's own run of that seed (same key: trained once)."""
    p = profile_with("full", tuned_seeds=(1, 2, 3))
    g, t1 = lr_tuning.grid(p), table1.grid(p)
    assert lr_tuning.held_optimizers(p) == knobs(p).table1_headline
    for o in knobs(p).table1_headline:
        for kind in ("sync", "2bw"):
            runs = g[(lr_tuning.HELD, o, kind)]
            c = chosen(o, kind)
            assert [s["seed"] for s in runs] == [1, 2, 3]
            assert all(s.get("lr", DEFAULT_LR[o]) == round(c * DEFAULT_LR[o], 12) for s in runs), (o, kind)
            if c == 1:
                assert {_key(s) for s in runs} <= {_key(s) for s in t1[(p.sizes[0], o, kind)]}
    assert lr_tuning.held_optimizers(profile_with("full", tuned_seeds=())) == ()
    with pytest.raises(ValueError, match="no chosen lr"):
        chosen("sgd", "sync")
    with pytest.raises(ValueError, match="variant"):
        chosen("adamw", "ef")


def _held_res(p, seed0, held):
    """Planted lr_tuning results: ``seed0`` {o: {c: (sync, 2bw)}} on the grid (also Table 1's
    preset cell), ``held`` {o: (sync losses, 2bw losses)} on the held-out seeds."""
    res = {}
    for o, by_c in seed0.items():
        for c, (s, a) in by_c.items():
            res[(lr_tuning.TUNE, o, c)] = {"sync": [s], "2bw": [a]}
        res[(p.sizes[0], o)] = res[(lr_tuning.TUNE, o, 1.0)]
        res[(lr_tuning.HELD, o)] = {"sync": list(held[o][0]), "2bw": list(held[o][1])}
    return res


def test_claims_are_judged_on_the_held_out_seeds_and_a_stale_choice_is_inconclusive(tmp_path, monkeypatch):
    """Planted: on seed 0 MARS's gap* (0.20) is far above Muon's (0.01), but on the held-out
    seeds at the chosen lrs (interior, resolved) MARS's gap is 0.00: 'MARS larger than Muon' does
    not hold, since the claim is judged on the held-out seeds. When CHOSEN disagrees with the
    grid's argmin the verdict is inconclusive and the report says to retrain."""
    from paper_figs.figures import tuned_lrs
    monkeypatch.setattr(tuned_lrs, "CHOSEN", {"adamw": (2.0, 1.0), "muon": (1.0, 1.0), "mars": (2.0, 1.0)})
    p = profile_with("micro", table1_optimizers=("adamw", "muon", "mars"), table1_headline=("adamw", "muon", "mars"),
                     tuning_lr_mults=(0.5, 1.0, 2.0, 4.0), tuned_gap_optimizers=("adamw", "muon", "mars"),
                     tuned_seeds=(1, 2, 3))
    seed0 = {"adamw": {0.5: (1.60, 1.85), 1.0: (1.50, 1.70), 2.0: (1.40, 1.80), 4.0: (1.46, 1.90)},
             "muon": {0.5: (1.40, 1.42), 1.0: (1.36, 1.37), 2.0: (1.38, 1.40), 4.0: (1.42, 1.45)},
             "mars": {0.5: (1.60, 1.70), 1.0: (1.50, 1.60), 2.0: (1.40, 1.65), 4.0: (1.46, 1.70)}}
    held = {"adamw": ((1.40, 1.41, 1.42), (1.70, 1.71, 1.72)),
            "muon": ((1.36, 1.37, 1.38), (1.371, 1.379, 1.39)),
            "mars": ((1.40, 1.41, 1.42), (1.401, 1.409, 1.42))}
    out = FigureOutput("lr_tuning", "t")
    lr_tuning._table1_tuned(StubContext(p, tmp_path), out, _held_res(p, seed0, held))
    status = {k.split(" (")[0]: v.status for k, v in out.verdicts.items()}
    assert status["AdamW gap larger than Muon's"] == HOLDS and status["AdamW gap much larger than Muon's"] == HOLDS
    assert status["MARS gap larger than Muon's"] == FAILS
    assert all("held-out seeds 1, 2, 3" in k for k in out.verdicts)
    row = next(r for r in out.measured if r.startswith("| MARS"))
    assert "| 0.200 | 14.29% | 0.000 ± 0.001 (n=3) | 0.100 |" in row   # gap*, held-out gap, preset gap
    # the grid now picks x1 for MARS's sync run, not CHOSEN's x2: its held-out runs are stale
    seed0["mars"][1.0] = (1.30, 1.60)
    out = FigureOutput("lr_tuning", "t")
    lr_tuning._table1_tuned(StubContext(p, tmp_path), out, _held_res(p, seed0, held))
    status = {k.split(" (")[0]: v.status for k, v in out.verdicts.items()}
    assert status["MARS gap larger than Muon's"] == INCONCLUSIVE and status["AdamW gap larger than Muon's"] == HOLDS
    assert any("update CHOSEN and retrain" in n for n in out.notes)


def test_lr_ordering_holds_when_the_gap_grows_and_fails_when_it_shrinks(tmp_path):
    """Planted one-seed grids: the 2BW gap 0.01 at x1 and 0.10 at x2 for both optimizers
    (holds), then the other way round (does not hold); Muon's own line follows."""
    p = profile_with("micro", table1_optimizers=("adamw", "muon"), tuning_lr_mults=(1.0, 2.0),
                     tuned_gap_optimizers=("adamw", "muon"))

    def judge(g1, g2):
        res = {(lr_tuning.TUNE, o, c): {"sync": [1.4], "2bw": [1.4 + g]} for o in ("adamw", "muon")
               for c, g in ((1.0, g1), (2.0, g2))}
        out = FigureOutput("lr_tuning", "t")
        lr_tuning._lr_ordering(StubContext(p, tmp_path), out, res)
        return {("every" if "every optimizer" in k else "muon" if "Muon's 2BW gap" in k else k): v.status
                for k, v in out.verdicts.items()}, out

    grows, out = judge(0.01, 0.10)
    assert grows == {"every": HOLDS, "muon": HOLDS}
    assert any(r.startswith("| Muon | 0.010 | 0.100 | holds |") for r in out.measured)
    shrinks, _ = judge(0.10, 0.01)
    assert set(shrinks.values()) == {FAILS}


def test_muons_grid_ends_get_more_seeds_and_the_ordering_reads_them(tmp_path):
    """Full profile: Muon's grid ends (x0.25 since the grid was extended below its edge best lr
    x0.5, and x8) at seeds 0-3; planted, the four-seed ends decide the ordering, not seed 0."""
    p = PROFILES["full"]
    g = lr_tuning.grid(p)
    keys = {_key(s) for k, v in g.items() if k[0] != lr_tuning.ENDS for s in v}
    for c in (0.25, 8.0):
        assert [s["seed"] for s in g[(lr_tuning.ENDS, "muon", c, "2bw")]] == [0, 1, 2, 3]
    assert {_key(s) for s in g[(lr_tuning.ENDS, "muon", 0.25, "sync")][:1]} <= keys   # seed 0: the grid's
    new = {_key(s) for k, v in g.items() if k[0] == lr_tuning.ENDS for s in v} - keys
    assert len(new) == 12   # x0.25 and x8, sync and 2BW, seeds 1-3
    q = profile_with("micro", table1_optimizers=("muon",), tuning_lr_mults=(1.0, 2.0), tuned_gap_optimizers=("muon",),
                     lr_ends_seeds=(("muon", (1, 2, 3)),))
    res = {(lr_tuning.TUNE, "muon", c): {"sync": [1.4], "2bw": [1.4 + g0]} for c, g0 in ((1.0, 0.05), (2.0, 0.0))}
    res.update({(lr_tuning.ENDS, "muon", c): {"sync": [1.4] * 4, "2bw": [1.4 + g4 + e for e in (0, .001, .002, .003)]}
                for c, g4 in ((1.0, 0.0), (2.0, 0.05))})
    out = FigureOutput("lr_tuning", "t")
    lr_tuning._lr_ordering(StubContext(q, tmp_path), out, res)
    muon = next(v for k, v in out.verdicts.items() if "Muon's 2BW gap" in k)
    assert muon.status == HOLDS and "4 seed(s) at each" in next(k for k in out.verdicts if "Muon's 2BW gap" in k)
