"""The grids several figures share: their knobs and the spelling of their shared runs.

A run's identity is the hash of its full settings (``paper_figs.records.cache.config_hash``), so two
figures share a run only if they spell it the same way: ``lr`` left out at the preset
(multiplier 1) and given as ``round(c x preset, 12)`` otherwise (:func:`lr_setting`), and the
momentum spelled out exactly where Figure 4's lr-retuned reading has that run
(:func:`tuned_run`). The figures that share runs spell them here, once:

- Table 1's cells (:func:`table1_grid`): Table 1's own grid, read back by lr_tuning;
- lr_tuning's runs at a multiple of the preset lr (:func:`tuned_run`): its sweep, and Figures
  3 and 2 at the tuned sync lrs (``fig3.grid(p, tuned=True)``, ``fig2_table2.grid(p, tuned=True)``);
- Figure 4's lr grid multipliers (``momentum_lr_mults``): Figure 4's lr-retuned reading and
  theory_training's runs.

:class:`Shared` holds the knobs more than one figure reads, one row per profile.
"""
from __future__ import annotations

from dataclasses import dataclass

from lmo.presets import DEFAULT_LR, DEFAULT_MOMENTUM
from lmo.variants import SYNC, TWO_BW

from . import plotting
from ..records.profiles import TABLE1_OPTIMIZERS, Profile
from .best_lrs import Argmin, argmin
from .common import Context, finals, spec_of, variant, variant_grid

NAME = "grids"   # the key of these knobs in Profile.grid_changes
TABLE1_KINDS = (SYNC, TWO_BW)


@dataclass(frozen=True)
class Shared:
    """The knobs more than one figure reads.

    ``seeds_main``: Figure 3's and Table 1's headline cells. ``table1_optimizers``,
    ``table1_headline``: Table 1's optimizers and those of its cells at ``seeds_main`` (the
    first size; lr_tuning's held-out reading too). ``momentum_grid``, ``momentum_lr_optimizers``,
    ``momentum_lr_mults``: Figure 4's momenta and its lr-retuned reading's optimizers and lr
    multipliers (lr_tuning spells a run as Figure 4's where Figure 4 has it; theory_training
    trains at these multipliers). ``horizons``: Figure 5's and the MoE figure's. ``tuning_lr_mults``,
    ``tuning_lr_extend``: lr_tuning's lr grid (x preset) and its extensions per optimizer
    (``((optimizer, (extra multipliers, ...)), ...)``), which the tuned readings' lr choice rests on.
    ``headline_extra``: the sequential plan's extra seeds of a headline optimizer's Table 1 cells
    (``((optimizer, (seeds, ...)), ...)``, docs/plan.md).
    """

    seeds_main: tuple = (0,)
    # Table 1 cells at sizes[0] with seeds_main: the claims' optimizers (AdamW, MARS vs Muon; Adan
    # vs Muon) and Lion, so that Lion's one-seed cells (Figure 4) borrow Lion's own seed spread
    table1_headline: tuple = ("adamw", "muon", "mars", "adan", "lion")
    table1_optimizers: tuple = TABLE1_OPTIMIZERS
    momentum_grid: tuple = (0.8, 0.9, 0.95, 0.98)
    momentum_lr_optimizers: tuple = ()   # Figure 4's lr-retuned reading: () turns it off
    momentum_lr_mults: tuple = (0.5, 1.0, 2.0)
    horizons: tuple = (1500, 3000)
    tuning_lr_mults: tuple = (0.5, 1.0, 2.0, 4.0, 8.0)   # () or one value: lr_tuning off
    tuning_lr_extend: tuple = ()
    # the sequential plan's seeds (docs/plan.md): ((optimizer, (seed, ...)), ...) added to that
    # headline optimizer's Table 1 cells at sizes[0], on top of seeds_main
    headline_extra: tuple = ()


_FULL = Shared(
    seeds_main=(0, 1, 2, 3),
    momentum_lr_optimizers=("adamw", "muon", "lion"),
    horizons=(1500, 3000, 6000),
    # Adan's and MARS's grids go on to x16 (best sync lr at x8); MARS's and Muon's down to x0.25 (best 2BW,
    # resp. both, lr at x0.5, the grid's lowest: docs/protocol.md §6)
    tuning_lr_extend=(("adan", (16.0,)), ("mars", (0.25, 16.0)), ("muon", (0.25,))),
)
SPECS = {
    "full": _FULL,
    "quick": _FULL,   # quick shows the full profile's grids (its other runs: full's kept records)
    "gpu": Shared(seeds_main=(0, 1), momentum_lr_optimizers=("adamw", "muon", "lion"), horizons=(2500, 5000, 10000)),
    "micro": Shared(seeds_main=(0, 1), momentum_grid=(0.9, 0.95), momentum_lr_optimizers=("adamw",),
                    momentum_lr_mults=(1.0, 2.0), horizons=(4, 8), tuning_lr_mults=(1.0, 2.0)),
}


def shared(p: Profile) -> Shared:
    """The shared knobs of profile ``p`` (``p.grid_changes["grids"]`` applied)."""
    return spec_of(p, NAME, SPECS)


def lr_setting(optimizer: str, mult: float) -> dict:
    """{} at the preset (multiplier 1: the run's key is the preset-lr run's), else
    {"lr": mult x DEFAULT_LR[optimizer]}."""
    return {} if mult == 1 else {"lr": round(mult * DEFAULT_LR[optimizer], 12)}


def table1_grid(p: Profile) -> dict:
    """Table 1's {(size, optimizer, variant): [settings per seed]}: ``p.seeds`` per cell,
    ``seeds_main`` for the headline cells (``table1_headline`` at the first size, where the claim is)."""
    sh = shared(p)
    g = variant_grid(p, TABLE1_KINDS, {"config": p.sizes, "optimizer": sh.table1_optimizers})
    head = tuple(o for o in sh.table1_headline if o in sh.table1_optimizers)
    extra = dict(sh.headline_extra)
    for o in head:
        g.update(variant_grid(p, TABLE1_KINDS, {"config": p.sizes[:1], "optimizer": (o,)},
                              seeds=tuple(sh.seeds_main) + tuple(extra.get(o, ()))))
    return g


def tuned_run(p: Profile, o: str, c: float, kind: str, seed: int, at=None) -> dict:
    """One run of ``o`` at peak lr c x preset in variant ``kind`` (``at``: its setting,
    ``common.variant``), spelled as lr_tuning's sweep spells it: where Figure 4's lr-retuned
    reading trains ``o`` at its preset momentum (c != 1), as Figure 4's run (momentum spelled
    out, the main size); else at the first size, momentum left to its preset."""
    extra = lr_setting(o, c)
    sh = shared(p)
    if c != 1 and o in sh.momentum_lr_optimizers and DEFAULT_MOMENTUM[o] in sh.momentum_grid:
        extra["momentum"] = DEFAULT_MOMENTUM[o]
        return variant(p, o, kind, at, seed=seed, **extra)   # Figure 4's run (its config: the main size)
    return variant(p, o, kind, at, seed=seed, config=p.sizes[0], **extra)


def tuning_mults(p: Profile, o: str) -> tuple:
    """lr_tuning's lr grid of optimizer ``o``: ``tuning_lr_mults`` and ``o``'s ``tuning_lr_extend``."""
    sh = shared(p)
    return tuple(sorted(set(sh.tuning_lr_mults) | set(dict(sh.tuning_lr_extend).get(o, ()))))


def sync_argmin(ctx: Context, o: str) -> Argmin:
    """The best sync lr of ``o``'s lr_tuning grid, read from the runs (the tuned readings rest on it)."""
    p, missing = ctx.profile, []
    cells = {c: {SYNC: finals(ctx, [tuned_run(p, o, c, SYNC, s) for s in p.seeds], missing)}
             for c in tuning_mults(p, o)}
    return argmin(ctx, cells, SYNC, o, name=plotting.label(o))
