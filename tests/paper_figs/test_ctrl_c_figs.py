"""Ctrl-C stops `make figs` at once (issue 39, item 4): a real SIGINT to the process group of
a real ``python -m paper_figs`` training with two worker processes ends it with exit status
130, no traceback, no worker left, and one line saying what finished (cached), what was
interrupted (with the checkpoint step it resumes from) and the command that continues. The
same Runner in one process says the same when the trainer itself is interrupted."""
import re
import sys

import pytest
from paper_figs_fakes import FakeTrainer, fake_deps, profile_with
from process_group import interrupt_when, start, survivors

from gpu_runs.checkpoint import newest_intact

from paper_figs.records.cache import Cache
from paper_figs.figures import fig3
from paper_figs.figures.common import figure_runs
from paper_figs.records.profiles import get_profile
from paper_figs.records.runs import Runner, describe, run_dir
from paper_figs.records.stopping import RunsInterrupted


def test_ctrl_c_stops_paper_figs_and_its_workers(tmp_path):
    out = tmp_path / "figs"
    argv = ["--profile", "micro", "--only", "fig3", "--jobs", "2", "--out", str(out)]
    p = start([sys.executable, "-m", "paper_figs", *argv], slow_step_s=1.0)   # 2 s from a step-2 checkpoint to the end
    def ready():    # a run finished, and another (not yet cached) is past its step-2 checkpoint
        mid = [d for d in (out / "runs").glob("*") if (d / "ckpt_step2.pt.sha256").exists()]
        return any((out / "cache").glob("*.json")) and any(not (out / "cache" / f"{d.name}.json").exists() for d in mid)

    _, err = interrupt_when(p, ready)
    assert p.returncode == 130, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    lines = [ln for ln in err.strip().splitlines() if "interrupted" in ln]
    assert len(lines) == 1 and err.strip().splitlines()[-1] == lines[0], err[-3000:]
    m = re.fullmatch(r"python -m paper_figs: interrupted: (\d+) of 12 run\(s\) finished \(cached\)(; interrupted: .*?)?"
                     r"(; (\d+) not started)?; continue with: (.*)", lines[0])
    assert m, lines[0]
    assert int(m.group(1)) == len(list((out / "cache").glob("*.json"))) >= 1
    assert m.group(5) == "python -m paper_figs " + " ".join(argv)
    steps = sorted(int(k) for k in re.findall(r"\(resumes from its step-(\d+) checkpoint\)", m.group(2) or ""))
    on_disk = sorted(newest_intact(d)[1] for d in (out / "runs").iterdir()
                     if not (out / "cache" / f"{d.name}.json").exists() and newest_intact(d))
    assert steps == on_disk and steps, lines[0]     # each interrupted run: the checkpoint it resumes from
    assert survivors(p.pid) == []
    assert not [f for f in out.rglob("*.tmp")]


def test_a_runner_interrupted_in_process_says_what_became_of_each_run(tmp_path):
    settings = figure_runs(fig3, profile_with("micro", seeds_main=(0,)))
    inner = FakeTrainer()

    def interrupted_on_the_third(cfg, progress=True):
        if inner.calls == 2:
            raise KeyboardInterrupt
        return inner(cfg, progress)

    cache = Cache(tmp_path / "cache")
    runner = Runner(fake_deps(interrupted_on_the_third), cache, log=lambda _: None)
    with pytest.raises(RunsInterrupted) as e:
        runner.run_all(settings)
    assert str(e.value) == (f"2 of 6 run(s) finished (cached); interrupted: {describe(settings[2])} "
                            f"(no checkpoint yet: starts over); 3 not started")
    assert len(cache.keys()) == 2 and not run_dir(cache, runner.key_of(settings[2])).exists()


def test_a_run_stopped_before_its_first_checkpoint_starts_over_next_time(tmp_path):
    """Stopped after logging step 1 but before its first checkpoint (step 4): the next
    invocation starts it over and ends as an uninterrupted run (it was refused, "already
    holds a run", at every later invocation)."""
    from gpu_runs.recipe import TrainConfig
    from gpu_runs.train import train

    from paper_figs.figures.common import variant
    from paper_figs.replay import stop_after
    deps = fake_deps(train=train, TrainConfig=TrainConfig)
    s = dict(variant(get_profile("micro", steps=8), "adamw", "sync", seed=0), log_every=1)   # evaluated at 4, 8
    ref = Runner(deps, Cache(tmp_path / "ref"), log=lambda _: None, progress=False).run_all([s])[0]
    cache = Cache(tmp_path / "out" / "cache")
    with stop_after(2):
        stopped = Runner(deps, cache, log=lambda _: None, progress=False).run_all([s])[0]
    d = run_dir(cache, stopped.key)
    assert not stopped.ok and (d / "log.jsonl").read_text().strip() and not list(d.glob("ckpt*"))
    again = Runner(deps, cache, log=lambda _: None, progress=False).run_all([s])[0]
    assert again.ok, again.error
    assert again.final == ref.final and cache.get(again.key)["resumed"] is False
