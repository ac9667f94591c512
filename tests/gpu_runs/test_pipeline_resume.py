"""Checkpoints across runs and programs (tiny Llama, 2 gloo stages, 8 steps, checkpoint
after 4): pipedream --resume continues the trainer's pipedream trajectory; stage
checkpoints merged by ``gpu_runs.pipeline.checkpoint to-trainer`` let ``gpu_runs.train
--resume`` continue a pipeline run to the trainer's uninterrupted trajectory; and
``from-trainer`` splits the trainer's ckpt.pt back into stage checkpoints that the
pipeline resumes from."""
import json
import shutil

import pytest
import torch

from gpu_runs.pipeline.conversion import from_trainer, to_trainer
from gpu_runs.pipeline.convert import main as ckpt_main
from gpu_runs.recipe import TrainConfig
from test_pipeline_llama import B, SEED, STEPS, T, corpus_dir, pipeline_log, trainer_log  # noqa: F401
from test_pipeline_mitigations import argv_of, assert_same

K = 4  # the checkpoint step


def step_ckpts_as_final(d, P=2):
    for s in range(P):
        shutil.copy(d / f"ckpt_step{K}_stage{s}.pt", d / f"ckpt_stage{s}.pt")


def test_pipedream_resume_equals_trainer(corpus_dir, tmp_path):  # noqa: F811
    want, want_params = trainer_log("pipedream", corpus_dir, tmp_path / "train")
    a, b = tmp_path / "a", tmp_path / "b"
    pipeline_log("pipedream", corpus_dir, a, ["--ckpt-every", str(K)])
    step_ckpts_as_final(a)
    got, got_params = pipeline_log("pipedream", corpus_dir, b, ["--resume", str(a)])
    assert_same(want[:K] + got, want, got_params, want_params)


CASES = [("2bw", "2bw", {}), ("2bw", "2bw", dict(ef=True, sync_start=2, sync_cooldown=2, dc_asgd=1000.0)),
         ("1f1b", "sync", {}),
         # the delay shapes: a corrector's state (the look-ahead's extrapolation, DC-ASGD-a's EMA), a longer
         # queue, the per-stage delays of the profile and of one delayed group (gpu_runs.pipeline.conversion)
         ("2bw", "2bw", dict(corrector="weight_prediction")), ("2bw", "2bw", dict(delay_profile="pipedream")),
         ("2bw", "2bw", dict(tau=2, delayed_groups="matrix", corrector="lr_damping")),
         ("2bw", "2bw", dict(tau=2, corrector="dc_asgd_adaptive"))]


@pytest.mark.parametrize("schedule, mode, kw", CASES)
def test_trainer_resumes_a_merged_pipeline_checkpoint(schedule, mode, kw, corpus_dir, tmp_path):  # noqa: F811
    want, want_params = trainer_log(mode, corpus_dir, tmp_path / "train", **kw)
    pipe = tmp_path / "pipe"
    pipeline_log(schedule, corpus_dir, pipe, argv_of(kw) + ["--ckpt-every", str(K)])
    run = tmp_path / "run"
    assert ckpt_main(["to-trainer", str(pipe), "--step", str(K), "--out", str(run / "ckpt.pt")]) == 0
    blob = torch.load(run / "ckpt.pt", weights_only=True)
    assert blob["step"] == K and [r["step"] for r in json.loads(blob["log"])] == list(range(1, K + 1))
    got, got_params = trainer_log(mode, corpus_dir, run, resume=True, **kw)
    assert got[:K] == json.loads(blob["log"])  # it resumed (a fresh start would re-log 1..K)
    assert_same(got, want, got_params, want_params)


@pytest.mark.parametrize("schedule, mode, kw", CASES[1:])
def test_pipeline_resumes_a_split_trainer_checkpoint(schedule, mode, kw, corpus_dir, tmp_path):  # noqa: F811
    """pipeline ckpt -> to-trainer -> from-trainer is the identity on the stage files,
    and the pipeline resumes from the split one to the uninterrupted trajectory."""
    want, want_params = trainer_log(mode, corpus_dir, tmp_path / "train", **kw)
    pipe, run, back, b = (tmp_path / n for n in ("pipe", "run", "back", "b"))
    pipeline_log(schedule, corpus_dir, pipe, argv_of(kw) + ["--ckpt-every", str(K)])
    to_trainer(pipe, run / "ckpt.pt", step=K)
    cfg = TrainConfig(config="tiny", mode=mode, stages=2, steps=STEPS, batch_size=B, seq_len=T,
                      eval_every=4, eval_batches=1, seed=SEED, data=corpus_dir, **kw)
    (run / "config.json").write_text(json.dumps(cfg.as_dict()))   # config.json, as the trainer writes it
    from_trainer(run, 2, back, microbatches=2, schedule=schedule)
    for s in range(2):
        orig = torch.load(pipe / f"ckpt_step{K}_stage{s}.pt", weights_only=True)
        new = torch.load(back / f"ckpt_stage{s}.pt", weights_only=True)
        assert new["step"] == orig["step"] == K
        for part in ("params", "opt_state"):
            assert set(new[part]) == set(orig[part])
            for k, v in orig[part].items():
                assert torch.equal(new[part][k], v), (part, k)
    got, got_params = pipeline_log(schedule, corpus_dir, b, argv_of(kw) + ["--resume", str(back)])
    assert_same(want[:K] + got, want, got_params, want_params)


def test_to_trainer_refuses_pipedream(corpus_dir, tmp_path):  # noqa: F811
    pipeline_log("pipedream", corpus_dir, tmp_path, [])
    with pytest.raises(ValueError, match="pipedream"):
        to_trainer(tmp_path)
