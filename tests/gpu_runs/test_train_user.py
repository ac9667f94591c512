"""The trainer as a user meets it: resume that never loses work, checkpoints by default,
errors without tracebacks, defaults in --help, progress on a time cadence, --compile."""
import json

import numpy as np
import pytest
import torch

import gpu_runs.checkpoint as ckpt
import gpu_runs.progress as progress
import gpu_runs.recipe as recipe
from gpu_runs.recipe import TrainConfig
from gpu_runs.train import main, train

FAST = dict(config="tiny", steps=4, batch_size=4, seq_len=16, eval_every=2, eval_batches=1, log_every=1)
ARGV = ["--steps", "4", "--batch-size", "4", "--seq-len", "16", "--eval-every", "2", "--eval-batches", "1"]


def test_resume_without_checkpoint_refused_and_log_kept(tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*ARGV, "--ckpt-every", "0", "--out", str(out)]) == 0
    log = (out / "log.jsonl").read_text()
    assert log and not (out / "ckpt.pt").exists()
    assert main([*ARGV, "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "no checkpoint" in err and "2 records" in err and "Traceback" not in err
    assert (out / "log.jsonl").read_text() == log


def test_fresh_run_never_overwrites_a_run(tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*ARGV, "--out", str(out)]) == 0
    before = (out / "log.jsonl").read_text()
    assert main([*ARGV, "--out", str(out)]) == 2
    assert "already holds a run" in capsys.readouterr().err
    assert (out / "log.jsonl").read_text() == before


@pytest.mark.parametrize("change, fields", [
    (["--steps", "6"], ["steps"]), (["--batch-size", "8"], ["batch_size"]),
    (["--optimizer", "muon", "--lr", "0.01"], ["lr", "optimizer"])])
def test_resume_with_a_different_run_lists_the_fields(tmp_path, capsys, change, fields):
    out = tmp_path / "run"
    assert main([*ARGV, "--out", str(out)]) == 0
    assert main([*ARGV, *change, "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err
    listed = err.split("differ (saved -> now):")[1].split(". Only")[0]
    assert sorted(p.split(":")[0].strip() for p in listed.split(";")) == fields
    assert "KeyError" not in err


def test_resume_prints_where_and_allows_cadence_changes(tmp_path, capsys):
    out = tmp_path / "run"
    a = train(TrainConfig(**FAST, out=str(out)), progress=False)
    assert json.loads((out / "result.json").read_text())["final_val_loss"] == a.final_val_loss
    (out / "result.json").unlink()
    assert main([*ARGV, "--out", str(out), "--resume", "--log-every", "3", "--eval-every", "1"]) == 0
    assert f"resumed at step 4 from {out / 'ckpt.pt'}" in capsys.readouterr().out


def test_checkpoint_by_default_at_every_evaluation(tmp_path, monkeypatch, capsys):
    saved = []
    real = ckpt.save_checkpoint
    monkeypatch.setattr(ckpt, "save_checkpoint", lambda path, blob: (saved.append(blob["step"]), real(path, blob)))
    train(TrainConfig(**dict(FAST, steps=5), out=str(tmp_path / "r")), progress=True)
    assert saved == [2, 4, 5]
    assert f"checkpoints: {tmp_path / 'r' / 'ckpt.pt'} at every evaluation" in capsys.readouterr().out
    assert TrainConfig().ckpt_every is None


@pytest.mark.parametrize("argv, words", [
    (["--optimizer", "muonn"], ["muonn", "adamw", "muon", "normuon"]),
    (["--lr", "-0.1"], ["lr", "-0.1"]), (["--lr", "nan"], ["lr"]),
    (["--delay", "async"], ["--delay", "sync", "2bw", "pipedream"]),
    (["--delay", "pipedream", "--stages", "0"], ["stages"]), (["--config", "huge"], ["huge", "tiny"]),
    (["--momentum", "1.5"], ["momentum"]), (["--ef"], ["ef", "2bw"]),
    (["--device", "foo"], ["--device", "foo"]), (["--device", "cuda:99"], ["--device", "cuda:99"]),
    (["--seed", "-1"], ["--seed", "-1"]), (["--seed", str(2 ** 32)], ["--seed"]),
    (["--delay", "2bw", "--sync-start", "5"], ["--sync-start", "none of the 4 steps", "synchronous"])])
def test_user_errors_are_messages_not_tracebacks(argv, words, capsys):
    with pytest.raises(SystemExit) as e:
        main([*ARGV, *argv])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and all(w in err for w in words), err


def test_missing_data_is_a_message(tmp_path, capsys):
    assert main([*ARGV, "--data", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "nope" in err and "Traceback" not in err


@pytest.mark.parametrize("write, words", [
    (lambda p: np.save(p, np.zeros(0, np.uint16)), ["no tokens"]),
    (lambda p: np.save(p, np.array([{"a": 1}], dtype=object), allow_pickle=True), ["not a plain .npy"])])
def test_bad_data_files_are_one_line_naming_the_file(tmp_path, capsys, write, words):
    """An empty or a pickled .npy ends in one line naming the file (a pickled array is refused,
    never unpickled), with nothing written to the run directory."""
    shard = tmp_path / "shard.npy"
    write(shard)
    assert main([*ARGV, "--data", str(shard), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "shard.npy" in err and all(w in err for w in words), err
    assert "allow_pickle" not in err.replace("(", " ").split("not a plain")[0]
    assert not (tmp_path / "run" / "config.json").exists()      # nothing written: --out is reusable


def test_help_shows_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    h = capsys.readouterr().out
    options = " ".join(h[h.index("options:"):].split())          # after the usage lines
    for flag, default in (("--steps", "200"), ("--weight-decay", "0.1"), ("--optimizer", "adamw"),
                          ("--ckpt-every", "None"), ("--seed", "0")):
        entry = options.split(f" {flag} ", 1)[1].split(" --")[0]
        assert f"(default: {default})" in entry, (flag, entry)


def test_progress_first_step_then_time_cadence(monkeypatch, capsys):
    monkeypatch.setattr(progress, "EVERY_S", 0.0)        # a line whenever due: every step
    train(TrainConfig(**dict(FAST, eval_every=0, log_every=0, steps=3)), progress=True)
    lines = [l for l in capsys.readouterr().out.splitlines() if l.startswith("step")]
    assert [l.split()[1] for l in lines] == ["1/3", "2/3", "3/3"]
    assert all("tok/s" in l and "ETA" in l for l in lines)
    monkeypatch.setattr(progress, "EVERY_S", 1e9)        # only the first step and the evaluations
    train(TrainConfig(**dict(FAST, eval_every=2, log_every=0, steps=5)), progress=True)
    lines = [l for l in capsys.readouterr().out.splitlines() if l.startswith("step")]
    assert [l.split()[1] for l in lines] == ["1/5", "2/5", "4/5", "5/5"]


def test_step_progress_eta_from_a_fake_clock():
    now = [0.0]
    p = progress.StepProgress(total=10, start=0, tokens_per_step=100, every_s=5, clock=lambda: now[0])
    now[0] = 2.0
    assert p.due(1) and p.line(1).endswith("50 tok/s ETA 18s")      # 2 s/step, 9 steps left
    now[0] = 4.0
    assert not p.due(2)
    now[0] = 8.0
    assert p.due(4) and p.line(4).endswith("50 tok/s ETA 12s")


def test_compile_agrees_with_eager_and_compiles_frames(monkeypatch):
    from torch._dynamo.utils import counters

    monkeypatch.setattr(recipe, "COMPILE_BACKEND", "aot_eager")   # Dynamo + AOTAutograd, no C++ toolchain
    kw = dict(FAST, steps=3, optimizer="muon")
    eager = train(TrainConfig(**kw), progress=False)
    torch._dynamo.reset()
    counters.clear()
    comp = train(TrainConfig(**kw, compile=True), progress=False)
    assert counters["stats"]["unique_graphs"] >= 1
    assert [r["train_loss"] for r in comp.log] == pytest.approx([r["train_loss"] for r in eager.log], rel=1e-5)
    for k in eager.params:   # every parameter moved as in eager (the head included)
        torch.testing.assert_close(comp.params[k], eager.params[k], rtol=1e-5, atol=1e-6)
