"""sweep: the grid (lr sweep at the preset beta + momentum sweep at the preset lr), skip and resume."""
import json

import pytest

from gpu_runs.sweep import grid, main, run_name


def test_grid_shares_the_preset_point_once():
    pts = grid(["muon"], [0.5, 1.0], [0.9, 0.95], ["sync", "2bw"])
    names = [run_name(p["optimizer"], p["lr_mult"], p["beta"], p["variant"]) for p in pts]
    assert len(names) == len(set(names)) == 6   # (0.5, .95), (1, .95), (1, .9) x 2 variants
    assert "muon_lr1x_b0.95_sync" in names and "muon_lr1x_b0.9_2bw" in names


@pytest.mark.parametrize("bad", [dict(variants=["async"]), dict(lr_mults=[0.0]), dict(momenta=[1.0]),
                                 dict(optimizers=["nope"])])
def test_grid_refuses_bad_input(bad):
    kw = dict(optimizers=["muon"], lr_mults=[1.0], momenta=[], variants=["sync"]) | bad
    with pytest.raises(ValueError):
        grid(**kw)


def test_sweep_runs_skips_finished_and_feeds_predict(tmp_path, capsys):
    args = [str(tmp_path), "--optimizers", "muon", "--lr-mults", "1", "--variants", "sync,2bw", "--steps", "3",
            "--batch-size", "4", "--seq-len", "16", "--eval-every", "3", "--eval-batches", "1", "--diag-every", "2",
            "--ckpt-every", "2"]
    assert main(args) == 0
    val = json.loads((tmp_path / "muon_lr1x_b0.95_2bw" / "result.json").read_text())["final_val_loss"]
    assert main(args) == 0
    assert "done before, skipped" in capsys.readouterr().out
    # a killed run (checkpoint, no result) resumes to the same final loss
    (tmp_path / "muon_lr1x_b0.95_2bw" / "result.json").unlink()
    assert main(args) == 0
    assert json.loads((tmp_path / "muon_lr1x_b0.95_2bw" / "result.json").read_text())["final_val_loss"] == val
    from gpu_runs.predict import main as predict
    assert predict([str(tmp_path / "muon_lr1x_b0.95_sync"), str(tmp_path / "muon_lr1x_b0.95_2bw")]) == 0


def test_unit_progress_eta_from_a_fake_clock():
    from gpu_runs.progress import UnitProgress
    now = [0.0]
    p = UnitProgress("sweep", 4, clock=lambda: now[0])
    assert p.line(0, "a: skipped", counted=False) == "[sweep 1/4] a: skipped (0s so far)"
    now[0] = 30.0
    assert p.line(1, "b: done") == "[sweep 2/4] b: done (30s so far, ETA 1m00s)"   # 30 s per run, 2 left


def test_killed_before_first_checkpoint_restarts_and_keeps_the_log(tmp_path, capsys):
    args = [str(tmp_path), "--optimizers", "adamw", "--lr-mults", "1", "--variants", "sync", "--steps", "2",
            "--batch-size", "4", "--seq-len", "16", "--eval-every", "2", "--eval-batches", "1", "--diag-every", "0"]
    d = tmp_path / "adamw_lr1x_b0.9_sync"
    d.mkdir()
    (d / "log.jsonl").write_text('{"step": 1}\n')
    assert main(args) == 0
    assert (d / "log.jsonl.killed").read_text() == '{"step": 1}\n' and (d / "result.json").exists()
    out = capsys.readouterr().out
    assert "[sweep 1/1] adamw_lr1x_b0.9_sync: starting" in out and "ETA" not in out.splitlines()[-2]


def test_bad_option_is_a_message(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main([str(tmp_path), "--optimizers", "muon", "--lr-mults", "1", "--config", "huge"])
    assert e.value.code == 2 and "huge" in capsys.readouterr().err
