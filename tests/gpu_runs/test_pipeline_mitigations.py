"""The trainer's 2bw mitigations in the real pipeline: --sync-start / --sync-cooldown
(flushed 1F1B steps, then the 2BW stream, then flushed steps again; the cooldown switch
applies the pending update) and --dc-asgd, with and without --ef. Oracle: the
single-process trainer ``gpu_runs.train`` with ``TrainConfig(mode="2bw", sync_start,
sync_cooldown, dc_asgd, ef)`` (lmo.delay.delayed / lmo.error_feedback), same seed and
data: per-step train losses, validation losses and final weights equal."""
import pytest
import torch

from test_pipeline_llama import STEPS, corpus_dir, pipeline_log, trainer_log  # noqa: F401

DC = 1000.0  # large enough that DC-ASGD moves the losses far beyond the tolerance (checked)


def argv_of(kw):
    out = []
    for k, v in kw.items():
        flag = "--" + k.replace("_", "-")
        out += [flag] if v is True else [flag, str(v)]
    return out


def assert_same(got, want, got_params, want_params):
    assert [r["step"] for r in got] == [r["step"] for r in want] == list(range(1, STEPS + 1))
    for g, w in zip(got, want):
        assert g["train_loss"] == pytest.approx(w["train_loss"], abs=2e-5), g["step"]
        assert ("val_loss" in g) == ("val_loss" in w)
        if "val_loss" in w:
            assert g["val_loss"] == pytest.approx(w["val_loss"], abs=2e-5), g["step"]
    assert set(got_params) == set(want_params)
    for k, v in want_params.items():
        torch.testing.assert_close(got_params[k], v, rtol=1e-4, atol=1e-5, msg=k)


@pytest.mark.parametrize("kw", [
    dict(sync_start=3), dict(sync_cooldown=3), dict(sync_start=2, sync_cooldown=3),
    dict(sync_start=2, sync_cooldown=2, ef=True), dict(sync_start=1, sync_cooldown=6),
    dict(dc_asgd=DC), dict(dc_asgd=DC, ef=True, sync_start=2, sync_cooldown=2),
], ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_2bw_mitigations_reproduce_trainer(kw, corpus_dir, tmp_path):  # noqa: F811
    want, want_params = trainer_log("2bw", corpus_dir, tmp_path / "train", **kw)
    got, got_params = pipeline_log("2bw", corpus_dir, tmp_path / "pipe", argv_of(kw))
    assert_same(got, want, got_params, want_params)
    # the option changes the trajectory (so the comparison can fail)
    plain, _ = trainer_log("2bw", corpus_dir, tmp_path / "plain", ef=kw.get("ef", False))
    assert max(abs(a["train_loss"] - b["train_loss"]) for a, b in zip(plain, want)) > 1e-4  # 5x the tolerance


@pytest.mark.parametrize("kw", [dict(sync_start=3, sync_cooldown=2), dict(ef=True, sync_start=2, dc_asgd=DC)])
def test_resume_across_the_switch(kw, corpus_dir, tmp_path):  # noqa: F811
    """ckpt after 4 steps (--ckpt-every 4), --resume to 8: equals the uninterrupted run
    (resumed inside the 2BW stream, then through the cooldown switch)."""
    want, want_params = trainer_log("2bw", corpus_dir, tmp_path / "train", **kw)
    a, b = tmp_path / "a", tmp_path / "b"
    pipeline_log("2bw", corpus_dir, a, argv_of(kw) + ["--ckpt-every", "4"])
    for s in range(2):
        (a / f"ckpt_step4_stage{s}.pt").replace(a / f"ckpt_stage{s}.pt")
        (a / f"ckpt_step4_stage{s}.pt.sha256").replace(a / f"ckpt_stage{s}.pt.sha256")   # its checksum
    got, got_params = pipeline_log("2bw", corpus_dir, b, argv_of(kw) + ["--resume", str(a)])
    assert_same(want[:4] + got, want, got_params, want_params)
