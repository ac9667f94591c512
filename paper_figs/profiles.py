"""Profiles: how big each experiment is, which figures a profile shows, which runs train live.

A profile fixes the training scale (model config, steps, batch) and, per figure, the
grid (optimizers, momenta, horizons, seeds). Figures a profile leaves out are listed in
the report as "not run in this profile" -- never run at a horizon too short to mean
anything.

Live or kept: the whole set (``full``, 142 runs, 18 of them the MoE figure's) takes hours
on 2 CPU cores, so ``quick`` shows the same grids as ``full`` but trains only Figure 3's
seed-0 runs live; every other run is read from the kept records of ``full``
(:mod:`paper_figs.kept`), and a run with no kept record is reported missing with the
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

ALL_FIGURES = (
    "fig3", "table1", "lr_tuning", "fig3_tuned", "fig2_table2", "fig2_tuned", "fig4", "fig5", "fig6", "moe",
    "theory_training", "theory", "pipeline",
)

TABLE1_OPTIMIZERS = ("adamw", "muon", "normuon", "adamuon", "soap", "nadam", "adan", "mars", "lion")

HORIZON_NOTE = (
    "Horizon chosen from a measurement on this kind of machine (2-layer width-128 "
    "byte-level transformer, batch 32x64 tokens, paper protocol): at 400 steps the early "
    "transient dominates (sync-async gap Muon +0.20, AdamW +0.16: the wrong order), at "
    "1500 steps AdamW +0.097 vs Muon +0.008, the paper's picture (Muon +0.026 on the tiny "
    "Llama model once the Muon family's AdamW group follows the lr schedule). So no training "
    "figure runs below 1500 steps outside the micro profile."
)


@dataclass(frozen=True)
class Profile:
    """Scale and grid of one profile.

    ``base`` holds TrainConfig settings shared by every run (anything not named takes the
    trainer's default, which is still part of the cache key). ``evals`` is the number of
    validation points per run: eval_every = max(1, steps // evals).
    """

    name: str
    description: str
    base: dict
    steps: int
    evals: int
    figures: tuple
    sizes: tuple = ("tiny", "small")
    main_size: str = "tiny"
    seeds_main: tuple = (0,)           # Figure 3 and Table 1's headline cells (below)
    seeds: tuple = (0,)                # every breadth cell (one seed: the pooled spread is borrowed)
    # Table 1 cells at sizes[0] with seeds_main: the claims' optimizers (AdamW, MARS vs Muon; Adan
    # vs Muon) and Lion, so that Lion's one-seed cells (Figure 4) borrow Lion's own seed spread
    table1_headline: tuple = ("adamw", "muon", "mars", "adan", "lion")
    horizon_seeds: tuple = (0,)        # Figure 5 (and its horizon check of Figure 3's verdict)
    table1_optimizers: tuple = TABLE1_OPTIMIZERS
    mitigation_optimizers: tuple = ("adamw", "muon")
    mitigation_size: str = "tiny"
    sync_start_frac: float = 0.1
    sync_cooldown_frac: float = 0.1
    dc_asgd: float = 0.04
    # Figure 2's sensitivity reading: each mitigation's window / lambda swept for these optimizers
    mitigation_sweep_optimizers: tuple = ()
    window_grid: tuple = (0.05, 0.1, 0.2)             # sync start / cool-down: fraction of the steps
    dc_asgd_grid: tuple = (0.04, 100.0, 1000.0, 10000.0)   # lambda (python -m gpu_runs.dc_asgd_scale)
    sweep_seeds: tuple = (0,)          # the sweep's seeds (its unmitigated runs: the same seeds)
    momentum_optimizers: tuple = ("adamw", "muon", "lion")
    momentum_grid: tuple = (0.8, 0.9, 0.95, 0.98)
    # Figure 4's lr-retuned reading: peak lr = multiplier x preset for each (optimizer, momentum),
    # the gap taken between the best sync and the best 2BW run; () turns it off
    momentum_lr_optimizers: tuple = ()
    momentum_lr_mults: tuple = (0.5, 1.0, 2.0)
    # ((optimizer, (extra multipliers, ...)), ...): Figure 4's lr grid goes on there for that optimizer, where
    # a best lr lay at the grid's edge (docs/protocol.md §6: no verdict from a grid edge)
    momentum_lr_extend: tuple = ()
    lion_beta2_grid: tuple = ()        # Figure 4's second Lion reading: betas[1] swept, betas[0] at its preset
    tuning_lr_mults: tuple = (0.5, 1.0, 2.0, 4.0, 8.0)   # lr_tuning's lr grid (x preset); () or one value: off
    tuned_gap_optimizers: tuple = TABLE1_OPTIMIZERS   # lr_tuning: 2BW swept too (Table 1 at tuned lrs)
    tuning_lr_extend: tuple = ()       # ((optimizer, (extra multipliers, ...)), ...): its grid goes on there
    tuned_seeds: tuple = ()            # lr_tuning's held-out seeds at paper_figs.tuned_lrs.CHOSEN (() off)
    lr_ends_seeds: tuple = ()          # ((optimizer, (seeds, ...)), ...): its grid's end lrs at these seeds too
    # theory_training: runs recording the theory's diagnostics (sync / 2BW / EF at every lr multiplier)
    theory_optimizers: tuple = ("adamw", "muon")
    theory_diag_every: int = 100       # the profile's base diag_every wins when it sets one
    horizons: tuple = (1500, 3000)
    horizon_optimizers: tuple = ("adamw", "muon")
    # Figure 5 on a second model size (sync and 2BW): does the gap's change with the horizon depend on scale?
    scale_size: str = "small"
    scale_horizons: tuple = ()
    scale_seeds: tuple = ()
    pipedream_optimizers: tuple = ("adamw", "muon")
    pipedream_size: str = "small"  # stages <= layers: tiny has 2, small 4 (delays 3, 2, 1, 0 at P=4)
    pipedream_stages: int = 4
    moe_size: str = "tiny_moe"  # the MoE figure (Table 3, Figures 1 and 5): model, optimizer, seeds
    moe_optimizer: str = "muon"
    moe_seeds: tuple = (0,)
    quick_external: bool = True
    jobs: int = 1
    threads_per_job: int = 0  # 0: leave torch's default
    verdicts_meaningful: bool = True
    horizon_note: str = HORIZON_NOTE
    live_figures: tuple | None = None  # None: every run trains live; else only these figures' runs
    live_seeds: tuple | None = None  # ... and of those only these seeds (None: all)
    kept_profile: str = ""  # the profile whose kept records fill the other runs

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
        return name in self.figures

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
    figures=ALL_FIGURES,
    seeds_main=(0, 1, 2, 3),
    horizon_seeds=(0, 1),
    mitigation_optimizers=TABLE1_OPTIMIZERS,
    mitigation_sweep_optimizers=("adamw", "muon"), sweep_seeds=(0, 1, 2),
    # Adan's and MARS's grids go on to x16 (best sync lr at x8); MARS's and Muon's down to x0.25 (best 2BW,
    # resp. both, lr at x0.5, the grid's lowest: docs/protocol.md §6)
    tuning_lr_extend=(("adan", (16.0,)), ("mars", (0.25, 16.0)), ("muon", (0.25,))), tuned_seeds=(1, 2, 3),
    lr_ends_seeds=(("muon", (1, 2, 3)),),
    momentum_optimizers=("adamw", "muon", "lion", "nadam"),
    momentum_lr_optimizers=("adamw", "muon", "lion"),
    # the lr-retuned reading's best lrs at x0.5 or x2, the grid's edges (docs/protocol.md §6)
    momentum_lr_extend=(("adamw", (0.25, 4.0)), ("lion", (0.25, 4.0)), ("muon", (0.25,))),
    lion_beta2_grid=(0.95, 0.99, 0.999),
    horizons=(1500, 3000, 6000),
    scale_horizons=(1500, 3000), scale_seeds=(0, 1, 2),
    moe_seeds=(0, 1),
    jobs=2, threads_per_job=1,
    quick_external=False,
))
QUICK = _register(replace(
    FULL, name="quick",
    description="every figure in 10-20 min on 2 CPU cores (see --list): Figure 3's seed-0 runs (AdamW, Muon; "
                "sync / 2BW / 2BW+EF; tiny model, 1500 steps) trained live, every other run of the "
                "full profile's grids read from its kept records (paper_figs/kept/), quick theory "
                "and pipeline benchmarks",
    live_figures=("fig3",), live_seeds=(0,), kept_profile="full", quick_external=True,
))
_register(Profile(
    name="gpu",
    description="the paper's model sizes (135m, 360m; MoE: moe_2b) on CUDA, 5000 steps of 64 x 512 tokens, "
                "theory diagnostics every 500 steps; give --data with token shards of a real corpus",
    base={"batch_size": 64, "seq_len": 512, "device": "cuda", "ns_dtype": "bfloat16", "diag_every": 500},
    steps=5000, evals=25,
    figures=ALL_FIGURES,
    sizes=("135m", "360m"), main_size="135m", mitigation_size="360m", pipedream_size="135m",
    pipedream_stages=8,
    moe_size="moe_2b",
    seeds_main=(0, 1),
    mitigation_optimizers=TABLE1_OPTIMIZERS,
    momentum_optimizers=("adamw", "muon", "lion", "nadam"),
    momentum_lr_optimizers=("adamw", "muon", "lion"),
    lion_beta2_grid=(0.95, 0.99, 0.999),
    horizons=(2500, 5000, 10000),
    quick_external=False,
))
_register(Profile(
    name="micro",
    description="seconds per figure, for tests: every figure at a few steps; verdicts are "
                "'inconclusive: micro profile'",
    base={"batch_size": 2, "seq_len": 16, "device": "cpu", "eval_batches": 1, "ns_dtype": "float32"},
    steps=4, evals=2,
    figures=ALL_FIGURES,
    seeds_main=(0, 1),
    momentum_optimizers=("adamw", "muon"), momentum_grid=(0.9, 0.95),
    momentum_lr_optimizers=("adamw",), momentum_lr_mults=(1.0, 2.0), lion_beta2_grid=(0.99, 0.999),
    tuning_lr_mults=(1.0, 2.0),
    mitigation_sweep_optimizers=("adamw",), window_grid=(0.1, 0.5), dc_asgd_grid=(0.04, 1000.0),
    horizons=(4, 8), theory_diag_every=2, scale_horizons=(4, 8), scale_seeds=(0,),
    pipedream_optimizers=("adamw",), pipedream_stages=2, pipedream_size="tiny",
    moe_seeds=(0, 1),
    verdicts_meaningful=False,
    horizon_note="micro profile: a few steps, only to exercise the pipeline; its numbers mean nothing.",
))


def get_profile(name: str, **changes: Any) -> Profile:
    """The named profile, optionally with fields replaced (``jobs=1`` ...)."""
    if name not in PROFILES:
        raise ValueError(f"profile: unknown {name!r}; choose from {sorted(PROFILES)}")
    return replace(PROFILES[name], **changes) if changes else PROFILES[name]
