"""Theory vs training (paper_figs/figures/theory_training.py): its runs, what a kept record
keeps of their diagnostics, and its four prediction checks, each shown able to fail."""
from __future__ import annotations

from paper_figs_fakes import StubContext, knobs, profile_with

import math

import pytest
import torch

from paper_figs.records.identity import run_key
from paper_figs.records.deps import Deps
from paper_figs.figures import fig3, theory_training as tt
from paper_figs.figures.common import runs_of
from paper_figs.records.kept import compact
from paper_figs.records.profiles import PROFILES, get_profile
from paper_figs.records.runs import Outcome, full_config, result_record
from paper_figs.statistics.verdicts import FAILS, HOLDS, INCONCLUSIVE

TINY = dict(config="tiny", batch_size=2, seq_len=16, eval_batches=1, eval_every=3, device="cpu",
            ns_dtype="float32", steps=6)


def _key(s):
    return run_key(full_config(Deps().TrainConfig, s))


def test_grid_diagnoses_every_lr_and_variant_and_its_twins_are_figure3s_runs():
    p = PROFILES["full"]
    g = tt.grid(p)
    runs = runs_of(g)
    assert len(runs) == len(knobs(p).theory_optimizers) * len(knobs(p).momentum_lr_mults) * 3 * len(p.seeds)
    assert all(s["diag_every"] == knobs(p).theory_diag_every for s in runs)
    f3 = {_key(s) for s in runs_of(fig3.grid(p))}
    # at the preset lr a diagnosed run is Figure 3's run (one training, paper_figs.records.identity); elsewhere its own
    own = {_key(s) for (_, o, c, k), ss in g.items() if c != 1 for s in ss}
    twins = {_key(s) for (_, o, c, k), ss in g.items() if c == 1 for s in ss}
    assert not own & f3
    assert twins <= f3 and len(twins) == len(knobs(p).theory_optimizers) * 3 * len(p.seeds)
    assert twins == {_key({k: v for k, v in s.items() if k != "diag_every"})
                     for (_, o, c, k), ss in g.items() if c == 1 for s in ss}
    # a profile that records diagnostics everywhere (gpu) keeps its own cadence
    assert tt.diag_every(get_profile("full", base={**p.base, "diag_every": 7})) == 7
    assert tt.grid(profile_with("full", theory_optimizers=())) == {}


@pytest.fixture(scope="module")
def diagnosed():
    from gpu_runs.recipe import TrainConfig
    from gpu_runs.train import train
    torch.set_num_threads(1)
    cfg = dict(TINY, optimizer="muon", mode="2bw", ef=True)
    plain = train(TrainConfig(**cfg), progress=False)
    diag = train(TrainConfig(**cfg, diag_every=2), progress=False)
    return cfg, plain, diag


def test_diagnostics_do_not_change_the_trajectory(diagnosed):
    _, plain, diag = diagnosed
    assert diag.diagnostics and not plain.diagnostics
    assert diag.final_val_loss == plain.final_val_loss
    assert all(torch.equal(plain.params[k], diag.params[k]) for k in plain.params)


def test_kept_record_keeps_what_the_predictions_read(diagnosed):
    """summarize_record of a kept (compacted) record equals that of the full cache record."""
    from gpu_runs.predict import summarize_record
    cfg, _, diag = diagnosed
    full = full_config(Deps().TrainConfig, dict(cfg, diag_every=2))
    cache_rec = {"key": run_key(full), "config": full, "settings": cfg, "result": result_record(diag)}
    kept_rec = compact(cache_rec)
    assert len(kept_rec["result"]["diagnostics"]) == len(diag.diagnostics)
    a = summarize_record(full, Outcome(None, cfg, record=cache_rec).diag_log())
    b = summarize_record(full, Outcome(None, cfg, record=kept_rec).diag_log())
    assert a["rows"] and a["consts"] is not None
    for k in ("rows", "consts", "r_mean", "final_val", "lr", "beta", "variant"):
        assert a[k] == b[k], k
    # a record without diagnostics keeps its old form
    plain_rec = compact({**cache_rec, "result": {**cache_rec["result"], "log": [
        {k: v for k, v in r.items() if k != "diagnostics"} for r in cache_rec["result"]["log"]]}})
    assert "diagnostics" not in plain_rec["result"]


def _run(rows):
    return dict(run="r", rows=[dict(step=i, measured=m, bound=b) for i, (m, b) in enumerate(rows, 1)])


def test_bound_check_fails_on_one_record_above_its_bound():
    ok, _ = tt.bound_check([_run([(0.1, 1.0), (0.5, 0.6)])])
    assert ok.status == HOLDS
    bad, _ = tt.bound_check([_run([(0.1, 1.0)]), _run([(0.7, 0.6)])])
    assert bad.status == FAILS and bad.reason.startswith("1 of 2 records") and "bound 1.17" in bad.reason
    assert tt.bound_check([_run([(None, 1.0)])])[0].status == INCONCLUSIVE
    # the premise reading leaves out the records before from_step, and only those
    early = [_run([(1.3, 1.0), (0.1, 1.0), (0.2, 1.0)])]
    assert tt.bound_check(early)[0].status == FAILS
    assert tt.bound_check(early, from_step=2)[0].status == HOLDS
    assert tt.bound_check([_run([(1.3, 1.0), (1.1, 1.0)])], from_step=2)[0].status == FAILS


def test_bound_check_reads_the_momentum_the_update_uses_when_asked():
    """AdamW's stored buffer (1 - beta1) g_1 misses the bound at step 1; the bias-corrected
    m_hat_1 = g_1 the update uses is within it: the two readings differ there and only there."""
    run = dict(run="adamw x1 sync", rows=[dict(step=1, measured=1.3, measured_used=0.4, bound=1.0),
                                          dict(step=100, measured=0.5, measured_used=0.5, bound=1.0)])
    assert tt.bound_check([run])[0].status == FAILS
    assert tt.bound_check([run], field="measured_used")[0].status == HOLDS
    run["rows"][0]["measured_used"] = 1.2
    assert tt.bound_check([run], field="measured_used")[0].status == FAILS
    old = dict(run="adamw, old record", rows=[dict(step=1, measured=1.3, measured_used=None, bound=1.0)])
    assert tt.bound_check([old], field="measured_used")[0].status == INCONCLUSIVE


def _ef_case(r_over_eta, ef, two_bw):
    res = {(tt.DIAG, "adamw", 1.0): {"sync": [1.40], "2bw": [two_bw], "ef": [ef]}}
    cs = [dict(optimizer="adamw", mult=1.0, r_over_eta_ef=r_over_eta)]
    return tt.ef_agreement(StubContext(), res, cs)[0]


@pytest.mark.parametrize("r_over_eta,ef,two_bw,expected", [
    (0.5, 1.40, 1.50, HOLDS),         # predicted to help, helps
    (1.5, 1.40, 1.50, FAILS),         # predicted not to help, helps
    (1.5, 1.60, 1.50, HOLDS),         # predicted not to help, hurts
    (0.5, 1.60, 1.50, FAILS),         # predicted to help, hurts
    (0.5, 1.501, 1.50, INCONCLUSIVE),  # inside the noise
])
def test_ef_agreement_compares_the_prediction_with_the_resolved_measurement(r_over_eta, ef, two_bw, expected):
    assert _ef_case(r_over_eta, ef, two_bw).status == expected


def test_sufficient_reading_judges_only_the_cells_predicted_to_help():
    res = {(tt.DIAG, "adamw", 1.0): {"sync": [1.40], "2bw": [1.50], "ef": [1.40]},
           (tt.DIAG, "muon", 1.0): {"sync": [1.40], "2bw": [1.50], "ef": [1.40]}}
    cs = [dict(optimizer="adamw", mult=1.0, r_over_eta_ef=0.5), dict(optimizer="muon", mult=1.0, r_over_eta_ef=1.2)]
    assert tt.ef_agreement(StubContext(), res, cs)[0].status == FAILS   # iff: Muon's cell disagrees, refuting "exactly"
    assert tt.ef_agreement(StubContext(), res, cs, sufficient=True)[0].status == HOLDS
    res[(tt.DIAG, "adamw", 1.0)]["ef"] = [1.60]                             # predicted to help, hurts
    assert tt.ef_agreement(StubContext(), res, cs, sufficient=True)[0].status == FAILS


def test_relative_ranking_follows_the_predicted_order():
    res = {(tt.DIAG, "adamw", 1): {"sync": [1.45], "2bw": [1.52]},
           (tt.DIAG, "muon", 1): {"sync": [1.36], "2bw": [1.37]}}
    cs = [dict(optimizer="adamw", mult=1, pi_2bw_rel=0.02), dict(optimizer="muon", mult=1, pi_2bw_rel=0.005)]
    assert tt.relative_ranking(StubContext(), res, cs).status == HOLDS
    swapped = [dict(cs[0], pi_2bw_rel=0.001), cs[1]]   # a theory ranking Muon first is contradicted
    assert tt.relative_ranking(StubContext(), res, swapped).status == FAILS
    assert tt.relative_ranking(StubContext(), res, cs[:1]).status == INCONCLUSIVE


def test_first_seed_cells_tag_each_cell_with_its_multiplier():
    def run(o, lr, v, seed, mult, final):
        return dict(optimizer=o, lr=lr, beta=0.9, rest=(("seed", seed),), variant=v, final_val=final, consts=None,
                    r_mean=None, mult=mult, seed=seed)
    runs = [run("adamw", 1e-3, "sync", 0, 1.0, 1.4), run("adamw", 1e-3, "2bw", 0, 1.0, 1.5),
            run("adamw", 2e-3, "sync", 0, 2.0, 1.3), run("adamw", 2e-3, "2bw", 0, 2.0, 1.5),
            run("adamw", 1e-3, "sync", 1, 1.0, 1.4), run("adamw", 1e-3, "2bw", 1, 1.0, 1.45)]
    cs = tt.first_seed_cells(runs)
    assert [(c["mult"], round(c["gap_2bw"], 6)) for c in cs] == [(1.0, 0.1), (2.0, 0.2)]
    assert math.isfinite(cs[0]["gap_2bw"])
