"""The peak lrs lr_tuning's grid chose, written down so that runs at them can be planned.

For each Table 1 optimizer o and variant v, lr_tuning trains seed 0 at peak lr
c x ``lmo.presets.DEFAULT_LR[o]`` over its grid of multipliers c and picks

    c_v(o) = argmin_c L_v(o, c)        (final validation loss, ``common.best_lr``)

``CHOSEN[o] = (c_sync, c_2bw)`` records that choice as made on the full profile (tiny
model, 1500 steps, seed 0). A run at a chosen lr must be planned before anything trains,
so the choice cannot be read from the results it depends on; it is written here instead,
and ``tests/paper_figs/test_paper_figs_kept.py`` checks that it is still the argmin of the
kept seed-0 records (a changed grid or retrained record makes that test fail, and
lr_tuning's report says the table is stale).

Used by lr_tuning's held-out reading: the gap at the chosen lrs measured on seeds that
played no part in choosing them (``lr_tuning.Spec.tuned_seeds``), free of the winner's-curse bias
of taking the minimum over one noisy seed.
"""
from __future__ import annotations

from lmo.variants import SYNC, TWO_BW

#: the profile, model size and steps the choice was made on
CHOSEN_ON = ("full", "tiny", 1500)

#: optimizer -> (c_sync, c_2bw): peak lr = c x lmo.presets.DEFAULT_LR[optimizer]
CHOSEN: dict[str, tuple[float, float]] = {
    "adamw": (4.0, 1.0),
    "muon": (0.5, 0.5),
    "normuon": (2.0, 1.0),
    "adamuon": (4.0, 2.0),
    "soap": (2.0, 1.0),
    "nadam": (2.0, 2.0),
    "adan": (8.0, 1.0),
    "mars": (8.0, 0.5),
    "lion": (4.0, 2.0),
}


def chosen(optimizer: str, variant: str) -> float:
    """c_v(o): the chosen multiplier of ``optimizer``'s ``variant`` (SYNC or TWO_BW)."""
    if optimizer not in CHOSEN:
        raise ValueError(f"tuned_lrs: no chosen lr for {optimizer!r}; known: {sorted(CHOSEN)}")
    if variant not in (SYNC, TWO_BW):
        raise ValueError(f"tuned_lrs: variant must be {SYNC!r} or {TWO_BW!r}, got {variant!r}")
    return CHOSEN[optimizer][variant == TWO_BW]
