"""Profiles: how big each experiment is, which figures a profile shows, which runs train live.

A profile fixes the training scale (model config, steps, batch); each figure declares its
grid (optimizers, momenta, horizons, seeds) in its own module, one row per profile
(``paper_figs.figures``). Figures a profile leaves out are listed in
the report as "not run in this profile" -- never run at a horizon too short to mean
anything.

Live or kept: the whole set (``full``, 142 runs, 18 of them the MoE figure's) takes hours
on 2 CPU cores, so ``quick`` shows the same grids as ``full`` but trains only Figure 3's
seed-0 runs live; every other run is read from the kept records of ``full``
(:mod:`paper_figs.records.kept`), and a run with no kept record is reported missing with the
command that produces it.

Why quick trains for 1500 steps (the horizon check): measured on a 2-core CPU with a
2-layer, width-128 byte-level transformer on standard-library text, batch 32 x 64 tokens,
paper protocol (wd 0.1, clip 1.0, warmup 10 %, cosine to 0.1 x peak). At 400 steps the
early transient dominates: the sync-async gap was +0.20 (Muon) and +0.16 (AdamW), the
opposite order of the paper's. At 1500 steps it was +0.097 (AdamW) and +0.008 (Muon): the
paper's picture, at about 90-110 s per run. (Those numbers predate the fix that gives the
Muon family's AdamW group the lr schedule; after it, the tiny Llama model's Muon gap at
1500 steps is +0.026: sync 1.3488, 2BW 1.3747, 2BW+EF 1.3512, from
``python -m gpu_runs.train --config tiny --optimizer muon --steps 1500 --batch-size 32
--seq-len 64 --delay {sync,2bw,2bw --ef}``.) ``full`` repeats the comparison at 1500 and
3000 steps (Figure 5) and the report says whether the longer horizon reverses the verdict.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

TABLE1_OPTIMIZERS = ("adamw", "muon", "normuon", "adamuon", "soap", "nadam", "adan", "mars", "lion")

HORIZON_NOTE = (
    "Horizon chosen from a measurement on this kind of machine (2-layer width-128 "
    "byte-level transformer, batch 32x64 tokens, paper protocol): at 400 steps the early "
    "transient dominates (sync-async gap Muon +0.20, AdamW +0.16: the wrong order), at "
    "1500 steps AdamW +0.097 vs Muon +0.008, the paper's picture (Muon +0.026 on the tiny "
    "Llama model once the Muon family's AdamW group follows the lr schedule). So no training "
    "figure runs below 1500 steps outside the micro profile."
)
MICRO_HORIZON_NOTE = "micro profile: a few steps, only to exercise the pipeline; its numbers mean nothing."


@dataclass(frozen=True)
class Profile:
    """Scale of one profile: what every figure shares.

    ``base`` holds TrainConfig settings shared by every run (anything not named takes the
    trainer's default, which is still part of the cache key). ``evals`` is the number of
    validation points per run: eval_every = max(1, steps // evals). ``sizes``: the two model
    sizes (Table 1's 135M and 360M stand-ins); the first is the main size. ``seeds``: every
    breadth cell's (one seed: the pooled spread is borrowed). Each figure's own knobs (its
    optimizers, grids, seeds, model) are a spec in its module, one row per profile name
    (``paper_figs.figures.common.spec_of``), the knobs several figures share are in
    ``paper_figs.figures.grids``; ``grid_changes`` {figure name (or "grids"): {knob: value}}
    overrides them for this profile (:func:`with_grid`).
    """

    name: str
    description: str
    base: dict
    steps: int
    evals: int
    figures: tuple | None = None   # None: every figure (paper_figs.figures.CATALOG, the one list)
    sizes: tuple = ("tiny", "small")
    seeds: tuple = (0,)
    jobs: int = 1
    threads_per_job: int = 0  # 0: leave torch's default
    verdicts_meaningful: bool = True
    live_figures: tuple | None = None  # None: every run trains live; else only these figures' runs
    live_seeds: tuple | None = None  # ... and of those only these seeds (None: all)
    kept_profile: str = ""  # the profile whose kept records fill the other runs
    grid_changes: dict = field(default_factory=dict)
    plan_batch: int = 0   # the sequential plan's batches applied (paper_figs.records.plan.through)
    plan_base: Any = None  # the profile before the plan was applied (None: plan_batch is 0)

    @property
    def main_size(self) -> str:
        """The main model size: the first of ``sizes``."""
        return self.sizes[0]

    @property
    def horizon_note(self) -> str:
        """Why the profile's horizon is what it is (the report's Horizon section)."""
        return HORIZON_NOTE if self.verdicts_meaningful else MICRO_HORIZON_NOTE

    def settings(self, **overrides: Any) -> dict:
        """TrainConfig keyword arguments of one run: ``base``, then scale, then ``overrides``."""
        s = dict(self.base)
        s.setdefault("config", self.main_size)
        s.setdefault("steps", self.steps)
        s.setdefault("seed", 0)
        s.update(overrides)
        if s["steps"] < 1:
            raise ValueError(f"steps: must be >= 1, got {s['steps']}")
        s.setdefault("eval_every", max(1, int(s["steps"]) // self.evals))
        return s

    def runs_figure(self, name: str) -> bool:
        return self.figures is None or name in self.figures

    def trains_live(self, figure: str, settings: dict) -> bool:
        """Is this run of ``figure`` trained by this profile (else read from kept records)?"""
        if self.live_figures is None:
            return True
        return figure in self.live_figures and (self.live_seeds is None
                                                or settings.get("seed", 0) in self.live_seeds)


# Newton-Schulz dtype pinned, not "auto": the run's key then names what it computed in, and a
# record kept on a CPU with fast bf16 replays on one without (fp32 costs Muon ~10 % there).
_CPU_BASE = {"batch_size": 32, "seq_len": 64, "device": "cpu", "ns_dtype": "float32"}

PROFILES: dict[str, Profile] = {}


def _register(p: Profile) -> Profile:
    PROFILES[p.name] = p
    return p


FULL = _register(Profile(
    name="full",
    description="every figure at CPU scale (hours; resumable through the cache): tiny and "
                "small models, 1500 steps, 4 seeds for Figure 3 and Table 1's tiny AdamW / Muon / "
                "MARS / Adan / Lion cells, 2 for the horizons 1500 / 3000 / 6000, the MoE figure on tiny_moe "
                "(Muon, 2 seeds, every horizon)",
    base=_CPU_BASE, steps=1500, evals=15,
    jobs=2, threads_per_job=1,
))
QUICK = _register(replace(
    FULL, name="quick",
    description="every figure in 10-20 min on 2 CPU cores (see --list): Figure 3's seed-0 runs (AdamW, Muon; "
                "sync / 2BW / 2BW+EF; tiny model, 1500 steps) trained live, every other run of the "
                "full profile's grids read from its kept records (paper_figs/kept/), quick theory "
                "and pipeline benchmarks",
    live_figures=("fig3",), live_seeds=(0,), kept_profile="full",
))
_register(Profile(
    name="gpu",
    description="the paper's model sizes (135m, 360m; MoE: moe_2b) on CUDA, 5000 steps of 64 x 512 tokens, "
                "theory diagnostics every 500 steps; give --data with token shards of a real corpus",
    base={"batch_size": 64, "seq_len": 512, "device": "cuda", "ns_dtype": "bfloat16", "diag_every": 500},
    steps=5000, evals=25,
    sizes=("135m", "360m"),
))
_register(Profile(
    name="micro",
    description="seconds per figure, for tests: every figure at a few steps; verdicts are "
                "'inconclusive: micro profile'",
    base={"batch_size": 2, "seq_len": 16, "device": "cpu", "eval_batches": 1, "ns_dtype": "float32"},
    steps=4, evals=2,
    verdicts_meaningful=False,
))


def get_profile(name: str, **changes: Any) -> Profile:
    """The named profile, optionally with fields replaced (``jobs=1`` ...)."""
    if name not in PROFILES:
        raise ValueError(f"profile: unknown {name!r}; choose from {sorted(PROFILES)}")
    return replace(PROFILES[name], **changes) if changes else PROFILES[name]


def with_grid(p: Profile, figure: str, **changes: Any) -> Profile:
    """``p`` with knobs of ``figure``'s spec (or of the shared ``"grids"``) replaced: ``changes``
    added to ``p.grid_changes[figure]``."""
    return replace(p, grid_changes={**p.grid_changes, figure: {**p.grid_changes.get(figure, {}), **changes}})
