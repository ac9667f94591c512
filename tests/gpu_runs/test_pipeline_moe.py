"""The MoE model in the real pipeline (gpu_runs.pipeline.moe): a 2-stage gloo pipeline of
``tiny_moe`` reproduces the single-process trainer with ``aux_groups = M`` (each
microbatch's balance loss, averaged: the objective both compute), step for step: train
loss (CE + coef * sum of L_aux), validation loss (CE alone), routing statistics and the
final weights. gpipe / 1f1b == sync, 2bw == 2bw, 2bw + EF == EF, pipedream == pipedream
--stages 2 (M = 1 there)."""
import json

import pytest
import torch

from gpu_runs.moe import MoE, balance_loss, grouped_balance_loss
from gpu_runs.recipe import TrainConfig
from gpu_runs.train import train
from test_pipeline_llama import run_pipeline

STEPS, B, T, SEED, M = 6, 4, 16, 5, 2


def trainer_run(mode, aux_groups, **kw):
    cfg = TrainConfig(config="tiny_moe", optimizer=kw.pop("optimizer", "adamw"), mode=mode, stages=2, steps=STEPS,
                      batch_size=B, seq_len=T, eval_every=3, eval_batches=1, seed=SEED, log_every=1,
                      aux_groups=aux_groups, device="cpu", **kw)
    return train(cfg, progress=False)


def pipeline_run(schedule, tmp, extra=(), optimizer="adamw"):
    argv = ["--schedule", schedule, "--config", "tiny_moe", "--optimizer", optimizer, "--steps", str(STEPS),
            "--batch-size", str(B), "--seq-len", str(T), "--seed", str(SEED), "--eval-every", "3",
            "--eval-batches", "1", "--microbatches", str(M), "--out", str(tmp), "--quiet", "--timeout", "60",
            "--device", "cpu", *extra]
    log, params = run_pipeline(argv, tmp)
    return log, params, json.loads((tmp / "config.json").read_text())


def assert_same_run(got, want, got_params, want_params, loss_tol=2e-5):
    assert [r["step"] for r in got] == [r["step"] for r in want] == list(range(1, STEPS + 1))
    for g, w in zip(got, want):
        assert g["train_loss"] == pytest.approx(w["train_loss"], abs=loss_tol), g["step"]
        assert ("val_loss" in g) == ("val_loss" in w)
        if "val_loss" in w:
            assert g["val_loss"] == pytest.approx(w["val_loss"], abs=loss_tol)
        assert set(g["routing"]) == set(w["routing"]) == {"layers.0.mlp", "layers.1.mlp"}
        for name, wr in w["routing"].items():
            gr = g["routing"][name]
            assert gr["load"] == pytest.approx(wr["load"], abs=1e-6), (g["step"], name)
            assert gr["aux_loss"] == pytest.approx(wr["aux_loss"], abs=1e-5), (g["step"], name)
            assert gr["dropped"] == 0
    assert set(got_params) == set(want_params)
    assert_same_weights(got_params, want_params)


#: one AdamW step moves an element by at most about the peak lr (tiny_moe's preset: 1e-3)
ONE_STEP = 1e-3


def assert_same_weights(got_params, want_params, rtol=1e-4, atol=1e-5, max_outliers=1e-4):
    """Every weight within float tolerance, except at most a fraction ``max_outliers`` of
    elements, and those within one step. Why: the pipeline sums microbatch gradients in
    another order (~1e-7 relative); where an element's gradient is itself at that level (an
    expert row that few tokens reach), AdamW's m / (sqrt(v) + eps) turns the rounding into an
    O(lr) difference of its update. On an AMD EPYC (AVX2) one element of 131072 in
    layers.1.mlp.w_gate differed by 2.6e-5 after 6 steps. A wrong objective or a wrong
    schedule moves every element (and the losses above), not one in ten thousand."""
    for k, v in want_params.items():
        diff = (got_params[k] - v).abs()
        outside = diff > atol + rtol * v.abs()
        assert int(outside.sum()) <= max_outliers * v.numel(), (k, int(outside.sum()), v.numel())
        assert float(diff.max()) <= ONE_STEP, (k, float(diff.max()))


def argv_of(kw) -> list:
    return (["--ef"] if kw.get("ef") else []) + (["--ns-dtype", kw["ns_dtype"]] if "ns_dtype" in kw else [])


MUON32 = dict(optimizer="muon", ns_dtype="float32")   # Muon per expert, Newton-Schulz in float32
CASES = [("gpipe", "sync", {}), ("2bw", "2bw", dict(ef=True, **MUON32))]
SLOW = [("1f1b", "sync", {}), ("2bw", "2bw", {}), ("2bw", "2bw", {"ef": True}), ("pipedream", "pipedream", {}),
        ("gpipe", "sync", MUON32), ("pipedream", "pipedream", MUON32)]


@pytest.mark.parametrize("schedule, mode, kw", CASES + [pytest.param(*c, marks=pytest.mark.slow) for c in SLOW])
def test_moe_pipeline_reproduces_trainer(schedule, mode, kw, tmp_path):
    """Float tolerance in every case: AdamW, and Muon (one Newton-Schulz per expert of the 3-D
    stacks) in float32 Newton-Schulz."""
    groups = 1 if schedule == "pipedream" else M
    want = trainer_run(mode, groups, **kw)
    got, got_params, config = pipeline_run(schedule, tmp_path / "pipe", argv_of(kw), kw.get("optimizer", "adamw"))
    assert config["aux_groups"] == groups          # the equivalent trainer run, recorded
    assert config["ns_dtype"] == want.config.ns_dtype != "auto"        # resolved and recorded, as the trainer's
    assert_same_run(got, want.log, got_params, want.params)
    if groups > 1:   # the comparison can fail: the whole-batch balance loss is another objective
        whole = trainer_run(mode, 1, **kw).log[0]
        gap = max(abs(whole["routing"][n]["aux_loss"] - got[0]["routing"][n]["aux_loss"]) for n in whole["routing"])
        assert gap > 1e-3


@pytest.mark.slow
def test_moe_pipeline_muon_at_the_auto_ns_dtype(tmp_path):
    """At the machine's auto Newton-Schulz dtype (bf16 on a CPU with fast bf16 matmuls) bf16
    amplifies the ~1e-7 microbatch-sum difference (as in test_pipeline_llama's Muon case):
    within 1e-3 over these steps."""
    want = trainer_run("2bw", M, optimizer="muon")
    got, _, config = pipeline_run("2bw", tmp_path / "pipe", optimizer="muon")
    assert config["ns_dtype"] == want.config.ns_dtype
    for g, w in zip(got, want.log):
        assert g["train_loss"] == pytest.approx(w["train_loss"], abs=1e-3), g["step"]


def _balance_by_hand(probs, idx):
    """E sum_e f_e P_e with f_e from a one-hot count: an implementation independent of load_fractions."""
    n, e = probs.shape
    onehot = torch.zeros(n, e).scatter_(1, idx, 1.0)
    return e * float((onehot.sum(0) / idx.numel() * probs.mean(0)).sum())


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_grouped_balance_loss_is_the_mean_of_the_groups(groups):
    g = torch.Generator().manual_seed(groups)
    probs = torch.softmax(torch.randn(32, 6, generator=g), -1)
    idx = torch.topk(probs, 2, -1).indices
    want = sum(_balance_by_hand(p, i) for p, i in zip(probs.chunk(groups), idx.chunk(groups))) / groups
    assert float(grouped_balance_loss(probs, idx, groups)) == pytest.approx(want, rel=1e-6)
    if groups > 1:  # not additive: the grouped loss is another number than the batch's
        assert float(grouped_balance_loss(probs, idx, groups)) != pytest.approx(float(balance_loss(probs, idx)),
                                                                                rel=1e-4)
    with pytest.raises(ValueError, match="aux_groups"):
        grouped_balance_loss(probs, idx, 5)


def test_moe_aux_groups_equals_separate_forwards_per_group():
    """A layer with aux_groups = G on a batch has the L_aux of G separate forwards averaged
    (what the pipeline's microbatches compute), the same output and the batch's load."""
    torch.manual_seed(0)
    grouped, single = MoE(16, 8, 4, 2, aux_groups=2), MoE(16, 8, 4, 2)
    with torch.no_grad():
        for p in grouped.parameters():
            p.copy_(torch.randn(p.shape) * 0.5)
    single.load_state_dict(grouped.state_dict())
    x = torch.randn(4, 5, 16)
    y = grouped(x)
    parts = []
    for xm in x.chunk(2):
        out = single(xm)
        parts.append((out, float(single.last_aux.detach()), single.last_stats["load"]))
    torch.testing.assert_close(y, torch.cat([p[0] for p in parts]))
    assert float(grouped.last_aux.detach()) == pytest.approx((parts[0][1] + parts[1][1]) / 2, rel=1e-6)
    assert grouped.last_stats["load"] == pytest.approx([(a + b) / 2 for a, b in zip(parts[0][2], parts[1][2])],
                                                       abs=1e-7)
    with pytest.raises(ValueError, match="aux_groups"):
        grouped(torch.randn(3, 5, 16))


@pytest.mark.slow
def test_moe_pipeline_diagnostics_equal_the_trainers(tmp_path):
    """--diag-every on tiny_moe (per-expert blocks included) equals the trainer's with aux_groups = M."""
    want = trainer_run("2bw", M, diag_every=3)
    got, _, _ = pipeline_run("2bw", tmp_path / "pipe", ["--diag-every", "3"])
    w = {r["step"]: r["diagnostics"] for r in want.log if "diagnostics" in r}
    g = {r["step"]: r["diagnostics"] for r in got if "diagnostics" in r}
    assert sorted(w) == sorted(g) == [1, 3, 6]
    for step in (3, 6):
        assert set(g[step]["experts"]) == set(w[step]["experts"])
        for k, e in w[step]["experts"].items():
            for q in ("r", "d_norm", "r_over_eta"):
                assert g[step]["experts"][k][q] == pytest.approx(e[q], rel=1e-4, abs=1e-7), (step, k, q)
        for q in ("r", "d_norm", "L_local", "sigma", "momentum_error"):
            assert g[step][q] == pytest.approx(w[step][q], rel=1e-4), (step, q)


@pytest.mark.slow
def test_moe_pipeline_resumes_and_converts_to_the_trainer(tmp_path):
    """2bw on tiny_moe, checkpoint after 3 steps: the pipeline's --resume and the trainer's
    --resume of the merged checkpoint (config aux_groups = M) both continue the trajectory."""
    import shutil

    from gpu_runs.pipeline.convert import main as ckpt_main
    want = trainer_run("2bw", M)
    a, b, run = tmp_path / "a", tmp_path / "b", tmp_path / "run"
    pipeline_run("2bw", a, ["--ckpt-every", "3"])
    for s in range(2):
        shutil.copy(a / f"ckpt_step3_stage{s}.pt", a / f"ckpt_stage{s}.pt")
    got, got_params, _ = pipeline_run("2bw", b, ["--resume", str(a)])
    assert [r["step"] for r in got] == [4, 5, 6]
    assert_same_run(want.log[:3] + got, want.log, got_params, want.params)
    assert ckpt_main(["to-trainer", str(a), "--step", "3", "--out", str(run / "ckpt.pt")]) == 0
    res = trainer_run("2bw", M, out=str(run), resume=True)
    assert_same_run(res.log, want.log, res.params, want.params)
