"""Issue 40 item 2: the logged lr is the optimizer's own (``lmo.registry.lr_at`` of the run's
optimizer, the ``lmo.schedules.WarmupCosine`` value it received); one ``RESUME_SAFE`` for the
trainer and the pipeline; the pipeline's stage checkpoints record the run spec's own dict and
``--resume`` rebuilds the spec from it; ``run_spec`` takes the fields' defaults from the
dataclass (an option absent or None is the field's default)."""
import argparse
import ast
import dataclasses
import json
import math
from pathlib import Path

import pytest
import torch

from lmo.presets import DEFAULT_LR
from lmo.registry import lr_at
from gpu_runs.data import get_corpus
from gpu_runs.model import Llama
from gpu_runs.parallelism import Parallelism
from gpu_runs.pipeline import build_parser, parse_job, run_spec, validate_args
from gpu_runs.pipeline.args import SHARED
from gpu_runs.pipeline.checkpoint import _saved_job, spec_record, stage_file
from gpu_runs.pipeline.llama import spec_dict, spec_of
from gpu_runs.recipe import TrainConfig, build_optimizer, model_config
from gpu_runs.train import train

ROOT = Path(__file__).resolve().parents[2]
FAST = dict(config="tiny", steps=6, batch_size=4, seq_len=16, eval_every=3, eval_batches=1, log_every=1)


def reference_lr(peak, T, wf, ff, t):
    """The protocol's warmup-cosine, written out here (not the package's code)."""
    W = int(round(wf * T))
    if t < W:
        return peak * (t + 1) / W
    return peak * (ff + (1 - ff) * 0.5 * (1 + math.cos(math.pi * min(1.0, (t - W) / max(1, T - W)))))


@pytest.mark.parametrize("kw", [dict(optimizer="adamw"), dict(optimizer="muon", mode="2bw", warmup_frac=0.5),
                                dict(optimizer="lion", lr=3e-4, final_frac=0.0, mode="pipedream", stages=2)])
def test_logged_lr_is_the_optimizers(kw):
    cfg = TrainConfig(**{**FAST, **kw})
    res = train(cfg, progress=False)
    corpus = get_corpus(cfg.data)
    params = dict(Llama(model_config(cfg, corpus.vocab_size), seed=cfg.seed).named_parameters())
    opt, _, lr = build_optimizer(cfg, params)
    peak = cfg.lr if cfg.lr is not None else DEFAULT_LR[cfg.optimizer]
    assert [r["step"] for r in res.log] == list(range(1, cfg.steps + 1))
    for r in res.log:
        t = r["step"] - 1
        assert r["lr"] == lr_at(opt, t) == lr(t)
        assert r["lr"] == pytest.approx(reference_lr(peak, cfg.steps, cfg.warmup_frac, cfg.final_frac, t), rel=1e-12)


def _assignments(name: str) -> list[str]:
    found = []
    for pkg in ("lmo", "theory", "verify", "gpu_runs", "paper_figs"):
        for f in (ROOT / pkg).rglob("*.py"):
            for node in ast.walk(ast.parse(f.read_text())):
                targets = (node.targets if isinstance(node, ast.Assign)
                           else [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    found.append(str(f.relative_to(ROOT)))
    return found


def test_one_resume_safe_list():
    assert _assignments("RESUME_SAFE") == ["gpu_runs/checkpoint.py"]
    from gpu_runs import checkpoint
    from gpu_runs.pipeline import checkpoint as pipeline_checkpoint
    assert pipeline_checkpoint.RESUME_SAFE is checkpoint.RESUME_SAFE
    fields = {f.name for f in dataclasses.fields(TrainConfig)} | {f.name for f in dataclasses.fields(Parallelism)}
    assert set(checkpoint.RESUME_SAFE) <= fields      # run-spec fields only, no process knob


BASE = ["--schedule", "1f1b", "--steps", "8", "--batch-size", "4", "--seq-len", "16"]


def _args(*extra):
    return build_parser().parse_args([*BASE, *extra])


def _spec_set(d: Path, P: int, *extra) -> dict:
    """A set of stage checkpoints in the new layout (the run spec's dict, no ``args``)."""
    job = parse_job(_args(*extra), P)
    blob = dict(step=8, schedule="1f1b", **spec_record(job))
    d.mkdir(parents=True, exist_ok=True)
    for s in range(P):
        torch.save(blob, stage_file(d, s))
    return blob


def test_stage_checkpoint_records_the_run_spec_and_resume_rebuilds_it(tmp_path):
    blob = _spec_set(tmp_path / "a", 2, "--optimizer", "muon", "--lr", "0.01", "--dp", "1", "-M", "4")
    assert "args" not in blob and json.loads(blob["spec"])["optimizer"] == "muon"
    want = parse_job(_args("--optimizer", "muon", "--lr", "0.01", "-M", "4"), 2).run
    assert _saved_job(blob, 2).run == want
    with pytest.raises(ValueError, match=r"optimizer: 'muon' -> 'adamw'"):
        validate_args(_args("--resume", str(tmp_path / "a")), 2, 2)
    _spec_set(tmp_path / "b", 2, "--eval-every", "7", "--ckpt-every", "3")    # resume-safe fields
    validate_args(_args("--resume", str(tmp_path / "b")), 2, 2)


def test_spec_dict_round_trip():
    run = TrainConfig(optimizer="muon", lr=0.01, stages=3, parallel=Parallelism("2bw", 6, 2), mode="2bw")
    assert spec_of(json.loads(json.dumps(spec_dict(run)))) == run
    assert spec_of(spec_dict(TrainConfig())) == TrainConfig()


def test_run_spec_takes_the_fields_defaults():
    """An option absent or None (an older checkpoint's recorded options) is the field's default."""
    args = build_parser().parse_args(["--schedule", "1f1b"])
    for name in ("weight_decay", "clip", "data"):
        setattr(args, name, None)
    del args.ns_dtype
    run, default = run_spec(args, 2).as_dict(), TrainConfig().as_dict()
    for name in SHARED:
        if name not in ("device",):
            assert run.get(name) == default.get(name), name


def test_old_args_checkpoint_still_read(tmp_path):
    args = vars(_args()) | dict(microbatches=2, optimizer="muon")
    blob = dict(step=8, schedule="1f1b", args=json.dumps(args))
    assert _saved_job(blob, 2).run.optimizer == "muon"
    assert isinstance(_saved_job(blob, 2).opts, argparse.Namespace)


@pytest.mark.parametrize("optimizer", ["adamw", "muon"])
def test_no_callback_from_lmo_into_gpu_runs(optimizer, monkeypatch):
    """The run's lr reaches lmo.registry.build as a value (lmo.schedules.WarmupCosine), never
    as a function of gpu_runs that lmo would call back."""
    from lmo import registry
    from lmo.schedules import WarmupCosine
    seen = []
    real = registry.build

    def spy(*a, **kw):
        seen.append((a, kw))
        return real(*a, **kw)

    monkeypatch.setattr(registry, "build", spy)
    cfg = TrainConfig(optimizer=optimizer, lr=0.01, steps=10)
    params = {"embed.weight": torch.zeros(8, 4), "layers.0.w.weight": torch.zeros(4, 4)}
    build_optimizer(cfg, params)
    (a, kw), = seen
    assert type(kw["lr"]) is WarmupCosine and kw["lr"] == WarmupCosine(0.01, 10, cfg.warmup_frac, cfg.final_frac)
    callables = [v for v in (*a, *kw.values()) if callable(v)]
    assert all(not getattr(v, "__module__", "").startswith("gpu_runs") for v in callables)
    assert "schedule" not in kw
