"""paper_figs/figures/tuned_lrs.py: the chosen lrs written down are still the argmin of lr_tuning's
kept seed-0 records (a retrained record or a changed grid makes this fail, as it should)."""
from __future__ import annotations

from paper_figs_fakes import knobs

from paper_figs.records.identity import run_key
from paper_figs.records.deps import Deps
from paper_figs.figures import lr_tuning
from paper_figs.figures.grids import tuning_mults
from paper_figs.figures.common import retuned_gap
from paper_figs.records.kept import KeptStore
from paper_figs.records.profiles import PROFILES
from paper_figs.records.runs import full_config
from paper_figs.figures.tuned_lrs import CHOSEN, CHOSEN_ON


def _loss(store, s, declared) -> float | None:
    """The kept final loss of ``s``; None for a run the protocol declared and nobody trained yet."""
    key = run_key(full_config(Deps().TrainConfig, s))
    rec = store.get(key)
    if rec is None and key in declared:
        return None
    assert rec is not None, f"no kept record for {s}: train it (python -m paper_figs --profile full --only lr_tuning)"
    return rec["result"]["final_val_loss"]


def test_chosen_is_the_argmin_of_the_kept_grid():
    """On the lrs that have kept records: the grid extensions the protocol declared below edge best
    lrs (paper_figs/planned_runs.py; MARS's and Muon's x0.25) may move the choice once trained, and
    this test then says to update CHOSEN."""
    from paper_figs.planned_runs import planned
    declared = {k for _, _, k in planned()}
    p = PROFILES[CHOSEN_ON[0]]
    assert (p.sizes[0], p.steps) == CHOSEN_ON[1:] and set(CHOSEN) == set(knobs(p).tuned_gap_optimizers)
    g, store = lr_tuning.grid(p), KeptStore()
    for o, (c_sync, c_2bw) in CHOSEN.items():
        cells = {c: {k: [_loss(store, s, declared) for s in g[(lr_tuning.TUNE, o, c, k)]] for k in ("sync", "2bw")}
                 for c in tuning_mults(p, o)}
        cells = {c: v for c, v in cells.items() if None not in v["sync"] + v["2bw"]}
        _, c_s, c_a = retuned_gap(cells)
        assert (c_s, c_a) == (c_sync, c_2bw), o
