"""Fake dependencies for the paper_figs tests ONLY (never used by the real pipeline).

The fake trainer draws a deterministic loss curve whose sync-async gap depends on the
optimizer and mode, so the figures have something to draw; its numbers mean nothing.
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from gpu_runs.recipe import TrainConfig


@dataclass
class FakeTrainConfig(TrainConfig):
    """The real gpu_runs.recipe.TrainConfig (same fields, so the fake cannot drift from it)
    with test-sized defaults."""

    steps: int = 100
    batch_size: int = 8
    seq_len: int = 32
    eval_every: int = 10
    eval_batches: int = 2


class FakeResult(NamedTuple):
    log: list
    final_val_loss: float


class FakeTrainer:
    """Callable like gpu_runs.train.train; counts its calls."""

    def __init__(self):
        self.calls = 0

    def __call__(self, cfg: FakeTrainConfig, progress: bool = True) -> FakeResult:
        self.calls += 1
        from paper_figs.records.runs import NOT_IN_KEY  # where it writes must not change its numbers
        # the fields as they were before the delay was stored: its flat spelling (mode, ef, ...)
        flat = {**{k: v for k, v in vars(cfg).items() if k != "delay"}, **cfg.delay.config_fields}
        h = zlib.crc32(repr(sorted((k, v) for k, v in flat.items() if k not in NOT_IN_KEY)).encode()) % 1000 / 1e5
        gap = {"adamw": 0.1, "mars": 0.12, "muon": 0.01}.get(cfg.optimizer, 0.02)
        kind = cfg.delay.kind
        pen = 0.0 if kind == "sync" else gap * (0.3 if kind == "ef" else 1.0) * (1.5 if kind == "pipedream" else 1)
        log = []
        for t in range(0, cfg.steps + 1, cfg.eval_every):
            v = 1.5 + 3.0 * math.exp(-t / 3) + pen * t / cfg.steps + h
            row = {"step": t, "train_loss": v + 0.01, "val_loss": v, "lr": 1e-3,
                   "tokens": t * cfg.batch_size * cfg.seq_len, "step_time": 0.01}
            if cfg.diag_every:   # the theory's quantities, made up (gpu_runs.diagnostics' fields)
                eta = 1e-3 * (1 + 10 * gap)
                r = 0.0 if kind == "sync" else eta * (0.5 if kind == "ef" else 1.0)
                row["diagnostics"] = dict(step=max(t, 1), L_local=50.0 * (1 + gap), sigma=2.0, rho=30.0, eta=1e-3,
                                          d_norm=eta, update_norm=eta, r=r, r_over_eta=r / 1e-3,
                                          momentum_error=0.5 + h)
            log.append(row)
        return FakeResult(log, log[-1]["val_loss"])


def fake_theory_figures(out_dir, quick=True):
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    p = out_dir / "fake_bound.png"
    p.write_bytes(b"\x89PNG fake")
    return [p]


def fake_run_report(quick, out_dir):
    checks = [{"bound": b, "problem": "quad", "run_variant": v, "holds": True, "tightness": 0.5}
              for b in ("derived_delayed_theorem", "derived_ef_lemma_worst", "paper_delayed_noise_literal")
              for v in ("delayed", "ef")]
    return {"quick": quick, "backend": "fake", "steps": 10, "seeds": 4, "lr": 0.05, "mu": 0.1,
            "checks": checks, "mutants": [{"mutant": "m", "caught": True}],
            "adversarial": [{"bound": "derived_delayed_theorem", "confirmed_ratio": 0.7, "violated": False}],
            "figures": [str(p) for p in fake_theory_figures(out_dir)]}


def fake_delay_price(K, variant="delayed", **constants):
    import numpy as np
    return 1.0 + {"delayed": 1.0, "ef": 2.0}[variant] / np.sqrt(np.asarray(K, float))


def fake_run_bench(quick=True):
    ratios = [dict(P=P, M=M, ideal=(M + P - 1) / M, measured_1f1b=(M + P - 1) / M * 0.95,
                   measured_gpipe=(M + P - 1) / M * 1.02) for P, M in ((2, 2), (4, 4), (4, 8))]
    return {"setting": "synthetic", "fwd_ms": 10.0, "bwd_ms": 20.0, "rows": [], "ratios": ratios}


def fake_deps(trainer: FakeTrainer | None = None, **changes):
    from paper_figs.records.deps import Deps
    ov = {"train": trainer or FakeTrainer(), "TrainConfig": FakeTrainConfig,
          "make_theory_figures": fake_theory_figures, "run_report": fake_run_report,
          "delay_price": fake_delay_price, "delay_price_leading": fake_delay_price, "run_bench": fake_run_bench}
    ov.update(changes)
    return Deps(overrides=ov)


class StubContext:
    """What a figure's verdict code reads from a ``paper_figs.figures.common.Context``: the
    profile, the figure folder, the seed spread a cell borrows (one pooled SD ``sd`` for
    every optimizer) and the verdict gate (none: the planted numbers decide)."""

    def __init__(self, profile=None, fig_dir=None, sd: float = 0.005):
        self.profile, self.fig_dir, self.sd = profile, fig_dir, sd

    def noise_for(self, optimizer, config=None, lr=1.0):
        from paper_figs.statistics.seed_stats import Noise
        return Noise(self.sd, 10, 3)

    def verdict(self, v):
        return v


def _knob_owners() -> dict:
    """{knob name: the module whose spec holds it} (a figure module's ``Spec``, ``grids.Shared``)."""
    import dataclasses

    from paper_figs.figures import CATALOG, grids
    owners = {}
    for m in (grids, *dict.fromkeys(getattr(e, "module", e) for e in CATALOG.values())):
        cls = m.Shared if m is grids else getattr(m, "Spec", None)
        for f in dataclasses.fields(cls) if cls else ():
            owners.setdefault(f.name, m)
    return owners


def profile_with(name: str, **changes):
    """``get_profile(name)`` with Profile fields and any figure's (or the shared) grid knobs
    replaced, each knob routed to the spec that holds it (``profiles.with_grid``)."""
    from paper_figs.records.profiles import get_profile, with_grid
    owners = _knob_owners()
    p = get_profile(name, **{k: v for k, v in changes.items() if k not in owners})
    for k, v in changes.items():
        if k in owners:
            p = with_grid(p, owners[k].NAME, **{k: v})
    return p


class knobs:  # noqa: N801 (reads like the profile it wraps)
    """``knobs(p).x``: the profile's field ``x``, or the knob ``x`` of the spec that holds it."""

    def __init__(self, p):
        self._p = p

    def __getattr__(self, name):
        owner = _knob_owners().get(name)
        if owner is None:
            return getattr(self._p, name)
        return getattr(owner.shared(self._p) if owner.NAME == "grids" else owner.spec(self._p), name)


class FailingAt(FakeTrainer):
    """The fake trainer whose k-th run raises ``fault(cfg)`` instead of training (a full disk,
    a Ctrl-C, ...); every other run trains as FakeTrainer does."""

    def __init__(self, k: int, fault):
        super().__init__()
        self.k, self.fault = k, fault

    def __call__(self, cfg, progress=True):
        if self.calls + 1 == self.k:
            self.calls += 1
            raise self.fault(cfg)
        return super().__call__(cfg, progress)

