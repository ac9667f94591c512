"""--ns-dtype auto is resolved once, from what the machine is (never a timing), recorded, and
reused on --resume: the same command resumes every time, even when the machine would now
choose differently; an optimizer without Newton-Schulz never has its resume refused over
the NS dtype. Trainer and pipeline (its checks run before any process starts)."""
from __future__ import annotations

import json
import random
import time

import pytest
import torch

from gpu_runs import checkpoint, recipe
from gpu_runs.checkpoint import RunDirError, config_differences, ns_dtype_matters
from gpu_runs.pipeline import build_parser, validate_args
from gpu_runs.pipeline.args import parse_job
from gpu_runs.pipeline.checkpoint import check_run_dir, stage_file
from gpu_runs.recipe import TrainConfig, resolve_ns_dtype
from gpu_runs.train import train
from lmo import ns_dtype as nd
from lmo.registry import NS_OPTIMIZERS, OPTIMIZERS

FAST = dict(config="tiny", steps=4, batch_size=2, seq_len=16, eval_every=2, eval_batches=1, log_every=1,
            device="cpu")
CLOCKS = ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "process_time")


def _no_clock(monkeypatch):
    def refuse(*a):
        raise AssertionError("ns_dtype must not be resolved by timing")
    for name in CLOCKS:
        monkeypatch.setattr(time, name, refuse)


def _loaded_clock(monkeypatch, seed):
    """A clock under erratic load: it runs forward by random amounts (any timing decision is a coin toss)."""
    rng, now = random.Random(seed), [0.0]

    def tick(*a):
        now[0] += rng.choice((1e-6, 1e-3, 0.5, 3.0))
        return now[0]
    monkeypatch.setattr(time, "perf_counter", tick)


def _new_process_under_load(monkeypatch, seed):
    """A resume as a new process meets it on a loaded machine whose CPU reports bf16
    instructions (where the old resolver timed a matmul): no cache survives, the clock is erratic."""
    for v in vars(nd).values():
        if hasattr(v, "cache_clear"):
            v.cache_clear()
    monkeypatch.setattr(nd, "cpu_has_bf16_instructions", lambda *a: True, raising=False)
    _loaded_clock(monkeypatch, seed)


def _other(name):
    return "bfloat16" if name == "float32" else "float32"


# ----------------------------------------------------------------------------- the resolver
@pytest.mark.parametrize("capability,want", [((9, 0), "bfloat16"), ((8, 0), "bfloat16"), ((7, 5), "float32")])
def test_auto_on_cuda_follows_the_capability_without_timing(monkeypatch, capability, want):
    _no_clock(monkeypatch)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: capability)
    assert {resolve_ns_dtype("auto", "cuda") for _ in range(10)} == {want}


def test_auto_on_cpu_is_float32_without_timing(monkeypatch):
    _no_clock(monkeypatch)
    monkeypatch.setenv("LMO_NS_DTYPE", "bfloat16")     # no environment variable either
    assert {resolve_ns_dtype("auto", "cpu") for _ in range(10)} == {"float32"}
    assert resolve_ns_dtype("float64", "cpu") == "float64"


def test_ns_optimizers_are_those_with_an_ns_dtype_option():
    import inspect
    have = {n for n, f in OPTIMIZERS.items() if "ns_dtype" in inspect.signature(f).parameters}
    assert have == set(NS_OPTIMIZERS)


# ----------------------------------------------------------------------------- the identity
def test_ns_dtype_counts_only_where_newton_schulz_runs():
    saved = dict(optimizer="adamw", ns_dtype="float32", opt_kwargs={}, steps=4)
    for name in sorted(set(OPTIMIZERS) - set(NS_OPTIMIZERS)):
        s = dict(saved, optimizer=name)
        assert not ns_dtype_matters(s)
        assert config_differences(s, dict(s, ns_dtype="bfloat16")) == []
    for name in NS_OPTIMIZERS:
        s = dict(saved, optimizer=name)
        assert config_differences(s, dict(s, ns_dtype="bfloat16")) == ["ns_dtype: 'float32' -> 'bfloat16'"]
        assert config_differences(s, dict(s, ns_dtype="auto")) == []       # unresolved: takes the recorded
        exact = dict(s, opt_kwargs={"exact": True})                        # SVD polar factor: no NS
        assert config_differences(exact, dict(exact, ns_dtype="bfloat16")) == []
    # a change of optimizer to one that runs NS still lists the dtype
    assert "ns_dtype" in " ".join(config_differences(saved, dict(saved, optimizer="muon", ns_dtype="bfloat16")))


# ----------------------------------------------------------------------------- the trainer
def test_same_command_resumes_ten_times_under_load(tmp_path, monkeypatch):
    """The issue's failure: under load the old timing flipped the choice and --resume of the
    same command was refused (ns_dtype: 'float32' -> 'bfloat16'), even for AdamW."""
    for opt in ("adamw", "muon"):
        out = tmp_path / opt
        first = train(TrainConfig(optimizer=opt, out=str(out), **FAST), progress=False)
        for i in range(10):
            _new_process_under_load(monkeypatch, i)
            res = train(TrainConfig(optimizer=opt, out=str(out), resume=True, **FAST), progress=False)
            assert res.config.ns_dtype == first.config.ns_dtype == "float32"
            assert res.log == first.log


def _kill_after(out, step):
    """What a kill after ``step`` leaves: the newer checkpoints and the result are gone."""
    for k in checkpoint.kept_steps(out):
        if k > step:
            for f in (checkpoint.step_file(out, k), out / f"ckpt_step{k}.pt.sha256"):
                f.unlink(missing_ok=True)
    for f in (out / "ckpt.pt", out / "ckpt.pt.sha256", out / "result.json"):
        f.unlink(missing_ok=True)


def test_resume_reuses_the_recorded_dtype_when_the_machine_now_chooses_another(tmp_path, monkeypatch):
    whole = train(TrainConfig(optimizer="muon", **FAST), progress=False)
    out = tmp_path / "run"
    train(TrainConfig(optimizer="muon", out=str(out), ckpt_every=2, **FAST), progress=False)
    recorded = json.loads((out / "config.json").read_text())["ns_dtype"]
    assert recorded == "float32"
    real = recipe.resolve_ns_dtype
    monkeypatch.setattr(recipe, "resolve_ns_dtype",
                        lambda name, dev: _other(real(name, dev)) if name == "auto" else name)
    fresh = train(TrainConfig(optimizer="muon", out=str(tmp_path / "new"), steps=1,
                              **{k: v for k, v in FAST.items() if k != "steps"}), progress=False)
    assert fresh.config.ns_dtype == "bfloat16"          # the patch is live: a new run would choose bf16
    _kill_after(out, 2)
    res = train(TrainConfig(optimizer="muon", out=str(out), ckpt_every=2, resume=True, **FAST), progress=False)
    assert res.config.ns_dtype == "float32"
    assert json.loads((out / "config.json").read_text())["ns_dtype"] == "float32"
    assert [r["train_loss"] for r in res.log] == [r["train_loss"] for r in whole.log]   # computed in fp32


def test_adamw_resume_ignores_ns_dtype_muon_does_not(tmp_path):
    for opt, refused in (("adamw", False), ("muon", True)):
        out = tmp_path / opt
        train(TrainConfig(optimizer=opt, out=str(out), **FAST), progress=False)
        again = TrainConfig(optimizer=opt, out=str(out), resume=True, ns_dtype="bfloat16", **FAST)
        if refused:
            with pytest.raises(RunDirError, match=r"ns_dtype: 'float32' -> 'bfloat16'"):
                train(again, progress=False)
        else:
            assert train(again, progress=False).final_val_loss > 0


# ----------------------------------------------------------------------------- the pipeline
BASE = ["--schedule", "1f1b", "--steps", "8", "--batch-size", "4", "--seq-len", "16"]


def _args(*extra):
    return build_parser().parse_args([*BASE, *extra])


def _fake_set(d, P, ns_dtype=None, config_json=None, **changes):
    """Stage checkpoints of a finished run with the options ``changes`` and the recorded
    ``ns_dtype`` (None: a checkpoint from before the field), and its config.json's ns_dtype."""
    args = vars(_args()) | dict(microbatches=P) | changes
    d.mkdir(parents=True, exist_ok=True)
    for s in range(P):
        blob = dict(step=8, schedule="1f1b", args=json.dumps(args))
        if ns_dtype is not None:
            blob["ns_dtype"] = ns_dtype
        torch.save(blob, stage_file(d, s))
    if config_json is not None:
        (d / "config.json").write_text(json.dumps({"ns_dtype": config_json}))


def _settled(args, P=2):
    job = parse_job(args, P, 2)
    check_run_dir(job, P)
    return job.run.ns_dtype


def test_pipeline_settles_auto_once_without_timing(monkeypatch):
    _no_clock(monkeypatch)
    assert _settled(_args("--optimizer", "muon")) == "float32"
    assert _settled(_args("--optimizer", "muon", "--ns-dtype", "bfloat16")) == "bfloat16"


@pytest.mark.parametrize("where", ["checkpoint", "config.json"])
def test_pipeline_resume_reuses_the_recorded_dtype(tmp_path, monkeypatch, where):
    rec = dict(ns_dtype="bfloat16") if where == "checkpoint" else dict(config_json="bfloat16")
    _fake_set(tmp_path, 2, optimizer="muon", **rec)
    monkeypatch.setattr(recipe, "resolve_ns_dtype", lambda name, dev: "float32" if name == "auto" else name)
    for _ in range(10):
        assert _settled(_args("--optimizer", "muon", "--resume", str(tmp_path))) == "bfloat16"
    validate_args(_args("--optimizer", "muon", "--resume", str(tmp_path)), 2, 2)


def test_pipeline_adamw_resume_ignores_ns_dtype_muon_does_not(tmp_path):
    for opt, refused in (("adamw", False), ("muon", True)):
        d = tmp_path / opt
        _fake_set(d, 2, ns_dtype="float32", optimizer=opt)
        args = _args("--optimizer", opt, "--ns-dtype", "bfloat16", "--resume", str(d))
        if refused:
            with pytest.raises(ValueError, match=r"ns_dtype: 'float32' -> 'bfloat16'"):
                validate_args(args, 2, 2)
        else:
            validate_args(args, 2, 2)
