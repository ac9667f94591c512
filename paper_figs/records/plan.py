"""The sequential plan (docs/plan.md) as data: the batches of runs trained after the plan's
commit, in order, each as grid changes of the full profile.

A batch ``k`` names the confirmatory claims it feeds and the figure knobs it sets (absolute
values, not increments: ``horizon_seeds=(0, 1, 2)``). The full profile *through batch k* is
the full profile with batches 1..k's changes applied in order (:func:`through`); batch 0 is
the full profile as it stood when the plan was committed. The figures read the full profile
through the last batch whose runs are all kept (``paper_figs.plan_state``), so a batch
enters the verdicts whole, at one look (docs/plan.md §3), and never half-trained.

Nothing here reads a result: the batches were written before any of their runs was
launched, and a record of a plan run carries the commit it was launched from
(``paper_figs.records.provenance``), which a test checks against the plan's own commit.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from .profiles import Profile, with_grid

#: the file whose first commit is the plan's commit (launches must come after it)
PLAN_DOC = "docs/plan.md"


@dataclass(frozen=True)
class Batch:
    """One batch: ``claims`` it feeds, ``changes`` {figure (or "grids"): {knob: absolute value}},
    ``figures`` to train it (``--only``), and why it is where it is in the order."""

    id: int
    claims: tuple
    changes: dict = field(default_factory=dict)
    figures: tuple = ()
    why: str = ""


BATCHES: tuple[Batch, ...] = (
    Batch(1, ("C2", "C4", "C7"),
          {"grids": {"headline_extra": (("muon", (4, 5)), ("mars", (4, 5)), ("adan", (4, 5)))},
           "fig2_table2": {"main_extra": (("adan", (1, 2)), ("nadam", (1, 2)))}},
          ("table1", "fig2_table2"),
          "cheapest runs first (tiny model, 1500 steps, ~3.5 CPU min each): C2 and C4 add two seeds to Muon's, "
          "MARS's and Adan's Table 1 cells; C7 gives Adan's and NAdam's async / async + EF pair three seeds "
          "(Adan's async runs at seeds 1, 2 are Table 1's)"),
    Batch(2, ("C10",),
          {"fig5": {"horizon_seeds": (0, 1, 2)}},
          ("fig5",),
          "C10's growth needs the longest horizon: a third seed of AdamW's and Muon's 3000- and 6000-step sync "
          "and 2BW runs (the 1500-step runs at seed 2 are Figure 3's)"),
    Batch(3, ("C12",),
          {"fig6": {"extra_seeds": (1, 2)}},
          ("fig6",),
          "C12 on the small model (~15 CPU min a run): seeds 1 and 2 of 2BW and PipeDream, AdamW and Muon"),
    Batch(4, ("C2", "C4", "C7"),
          {"grids": {"headline_extra": (("muon", (4, 5, 6, 7)), ("mars", (4, 5, 6, 7)), ("adan", (4, 5, 6, 7)))},
           "fig2_table2": {"main_extra": (("adan", (1, 2, 3, 4)), ("nadam", (1, 2, 3, 4)))}},
          ("table1", "fig2_table2"),
          "the second look's seeds for the tiny-model claims, for those still undecided after batch 1"),
    Batch(5, ("C10", "C12"),
          {"fig5": {"horizon_seeds": (0, 1, 2, 3)}, "fig6": {"extra_seeds": (1, 2, 3)}},
          ("fig5", "fig6"),
          "a fourth seed for the horizon and PipeDream claims, for those still undecided after batches 2-3"),
)
BY_ID = {b.id: b for b in BATCHES}


def changes_through(k: int) -> dict:
    """The grid changes of batches 1..k merged in order ({figure: {knob: value}}): a later batch's
    value of a knob replaces an earlier one's. k = 0: none (the profile as the plan found it)."""
    if not 0 <= k <= len(BATCHES):
        raise ValueError(f"plan batch: must be 0..{len(BATCHES)}, got {k}")
    out: dict = {}
    for b in BATCHES[:k]:
        for fig, knobs in b.changes.items():
            out[fig] = {**out.get(fig, {}), **knobs}
    return out


def claims_fed(k: int) -> set:
    """The claims batches 1..k feed."""
    return {c for b in BATCHES[:k] for c in b.claims}


def through(profile: Profile, k: int) -> Profile:
    """``profile`` with batches 1..k of the plan applied (:func:`changes_through`); it remembers
    the profile it started from (``plan_base``) and k (``plan_batch``), so that the earlier looks
    can be rebuilt (``through(p.plan_base, j)``). Applied to a profile already through some batch,
    it starts again from that profile's base."""
    base = profile.plan_base if profile.plan_base is not None else profile
    if k == 0:
        return base
    out = base
    for fig, knobs in changes_through(k).items():
        out = with_grid(out, fig, **knobs)
    return replace(out, plan_batch=k, plan_base=base)
