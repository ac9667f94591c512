"""Two-process gloo pipeline (ranks forked from the test process) on the toy model vs an independent single-process simulator
of the three recursions (sync, delayed by one, PipeDream per-block delays), with global
norm clipping on and weight decay on (so the weights the optimizer sees matter)."""
import json

import pytest
import torch

from gpu_runs.pipeline.launch import run_forked
from gpu_runs.pipeline.stage_module import split_layers
from gpu_runs.pipeline.toy import ToyLM, sgd_momentum, toy_batch

P, M, T, B, L, SEED, LR, CLIP, WD, EVAL_EVERY = 2, 2, 6, 4, 8, 3, 0.2, 0.5, 0.1, 4


def block_stage(name, num_layers, P=P):
    """Stage of a parameter in the toy model (embed first, norm/head last)."""
    if name.startswith("embed"):
        return 0
    if name.startswith("layers."):
        i = int(name.split(".")[1])
        return next(s for s, r in enumerate(split_layers(num_layers, P)) if i in r)
    return P - 1


def reference(mode, tied=False, P=P, B=B):
    """Losses and final weights of: sync x+=d_t; 2bw x+=d_{t-1}; pipedream x+=d_t with
    g_t taken at the mixed point (block s from x_{max(0, t - tau_s)}, tau_s = P-1-s)."""
    model = ToyLM(vocab=32, dim=16, num_layers=4, seed=SEED, tied=tied)
    names = [k for k, _ in model.named_parameters()]
    x = {k: v.detach().clone() for k, v in model.named_parameters()}
    opt = sgd_momentum(LR, 0.9, WD)
    state = opt.init(x)
    history, prev_d, prev2, losses, val = [dict(x)], None, None, [], {}
    for t in range(T):
        if mode == "pipedream":
            point = {k: history[max(0, t - (P - 1 - block_stage(k, 4, P)))][k] for k in names}
        else:
            point = x
        xb, yb = toy_batch(SEED, t, B, L, 32)
        leaves = {k: v.detach().requires_grad_() for k, v in point.items()}
        loss = torch.func.functional_call(model, leaves, (xb, yb))
        g = dict(zip(names, torch.autograd.grad(loss, [leaves[k] for k in names])))
        norm = torch.sqrt(sum(v.double().pow(2).sum() for v in g.values()))
        c = min(1.0, CLIP / (float(norm) + 1e-6))
        g = {k: v * c for k, v in g.items()}
        d, state = opt.update(g, state, x)
        losses.append(float(loss.detach()))
        if mode == "2bw":
            step, prev_d = prev_d, d
        elif mode == "2bw-ef":  # x_{t+1} = x_t + 2 d_{t-1} - d_{t-2}
            step = None if prev_d is None else {k: 2 * prev_d[k] - (prev2[k] if prev2 else 0) for k in names}
            prev2, prev_d = prev_d, d
        else:
            step = d
        if step is not None:
            x = {k: x[k] + step[k] for k in names}
        history.append(dict(x))
        if (t + 1) % EVAL_EVERY == 0 or t == T - 1:  # validation loss on x_{t+1}
            vb = [toy_batch(SEED + 7919, i, B, L, 32) for i in range(2)]
            with torch.no_grad():
                val[t] = sum(float(torch.func.functional_call(model, x, b)) for b in vb) / 2
    return losses, x, val, history


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b", "2bw", "pipedream", "2bw-ef",
                                      "1f1b-tied", "2bw-tied", "pipedream-tied"])
def test_pipeline_equals_reference(schedule, tmp_path):
    """Losses, validation losses, mid-run and final weights. '-tied': head = embedding,
    owned by stage 0 (delay tau_0 in pipedream), its head gradient sent from the last stage."""
    tied = schedule.endswith("-tied")
    schedule = schedule.replace("-tied", "")
    mode = {"gpipe": "sync", "1f1b": "sync"}.get(schedule, schedule)
    extra = (["--ef"] if schedule == "2bw-ef" else []) + (["--toy-tied"] if tied else [])
    schedule = schedule.replace("-ef", "")
    argv = ["--schedule", schedule, "--model", "toy", "--optimizer", "sgd", "--lr", str(LR),
            "--momentum", "0.9", "--weight-decay", str(WD), "--clip", str(CLIP),
            "--steps", str(T), "--batch-size", str(B), "--seq-len", str(L), "--seed", str(SEED),
            "--microbatches", str(M), "--out", str(tmp_path), "--quiet", "--timeout", "60",
            "--eval-every", str(EVAL_EVERY), "--eval-batches", "2", "--ckpt-every", "4", *extra]
    res = run_forked(argv, P, timeout=120)
    assert all(rc == 0 for rc, _ in res), [o[-2000:] for _, o in res]
    log = [json.loads(line) for line in open(tmp_path / "log.jsonl")]
    losses, x, val, history = reference(mode, tied)
    assert [r["step"] for r in log] == list(range(1, T + 1))  # 1-based, as gpu_runs.train logs
    torch.testing.assert_close(torch.tensor([r["train_loss"] for r in log]), torch.tensor(losses),
                               rtol=1e-5, atol=1e-5)
    got_val = {r["step"] - 1: r["val_loss"] for r in log if "val_loss" in r}
    assert set(got_val) == set(val) == {3, 5}
    for t in val:
        assert got_val[t] == pytest.approx(val[t], rel=1e-5, abs=1e-6)
    for name, want in [("ckpt_stage{}.pt", x), ("ckpt_step4_stage{}.pt", history[4])]:
        got = {}
        for s in range(P):
            got.update(torch.load(tmp_path / name.format(s))["params"])
        assert set(got) == set(want)
        for k in want:
            torch.testing.assert_close(got[k], want[k], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ef, tied", [(False, False), (True, True)])
def test_2bw_resume_continues_the_same_trajectory(ef, tied, tmp_path):
    """4 steps, then --resume to T: the last steps' losses and the final weights equal
    the uninterrupted reference (the checkpoint carries d_3, the pending delayed update)."""
    base = ["--schedule", "2bw", "--model", "toy", "--optimizer", "sgd", "--lr", str(LR),
            "--momentum", "0.9", "--weight-decay", str(WD), "--clip", str(CLIP),
            "--batch-size", str(B), "--seq-len", str(L), "--seed", str(SEED),
            "--microbatches", str(M), "--quiet", "--timeout", "60"] + (["--ef"] if ef else []) + (["--toy-tied"] if tied else [])
    a, b = tmp_path / "a", tmp_path / "b"
    res = run_forked(base + ["--steps", "4", "--out", str(a)], P, timeout=120)
    assert all(rc == 0 for rc, _ in res), [o[-2000:] for _, o in res]
    res = run_forked(base + ["--steps", str(T), "--out", str(b), "--resume", str(a)], P, timeout=120)
    assert all(rc == 0 for rc, _ in res), [o[-2000:] for _, o in res]
    log = [json.loads(line) for line in open(b / "log.jsonl")]
    losses, x, _, _ = reference("2bw-ef" if ef else "2bw", tied)
    assert [r["step"] for r in log] == list(range(5, T + 1))
    assert [r["train_loss"] for r in log] == pytest.approx(losses[4:], rel=1e-5)
    for s in range(P):
        for k, v in torch.load(b / f"ckpt_stage{s}.pt")["params"].items():
            torch.testing.assert_close(v, x[k], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("schedule, tied", [("1f1b", True), ("2bw", False), ("pipedream", True)])
def test_three_stages(schedule, tied, tmp_path):
    """P = 3: a middle stage (neither embedding nor loss), pipedream delays (2, 1, 0), with
    evaluations (pipedream + tied head + evaluation on 3 stages once retired a tied version
    a later forward needed)."""
    mode = {"1f1b": "sync"}.get(schedule, schedule)
    argv = ["--schedule", schedule, "--model", "toy", "--optimizer", "sgd", "--lr", str(LR),
            "--momentum", "0.9", "--weight-decay", str(WD), "--clip", str(CLIP),
            "--steps", str(T), "--batch-size", "6", "--seq-len", str(L), "--seed", str(SEED),
            "--microbatches", "3", "--out", str(tmp_path), "--quiet", "--timeout", "60",
            "--eval-every", str(EVAL_EVERY), "--eval-batches", "2"]
    res = run_forked(argv + (["--toy-tied"] if tied else []), 3, timeout=120)
    assert all(rc == 0 for rc, _ in res), [o[-2000:] for _, o in res]
    log = [json.loads(line) for line in open(tmp_path / "log.jsonl")]
    losses, x, val, _ = reference(mode, tied, P=3, B=6)
    assert [r["train_loss"] for r in log] == pytest.approx(losses, rel=1e-5, abs=1e-6)
    got_val = {r["step"] - 1: r["val_loss"] for r in log if "val_loss" in r}
    assert set(got_val) == set(val) == {3, 5}
    for t in val:
        assert got_val[t] == pytest.approx(val[t], rel=1e-5, abs=1e-6)
    got = {}
    for s in range(3):
        got.update(torch.load(tmp_path / f"ckpt_stage{s}.pt")["params"])
    for k in x:
        torch.testing.assert_close(got[k], x[k], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("P_, tied, ckpt_every", [(2, False, False), (2, True, True), (3, True, False)])
def test_pipedream_resume_continues_the_same_trajectory(P_, tied, ckpt_every, tmp_path):
    """pipedream, k steps then --resume to T: each stage's checkpoint holds the versions
    u_{k - tau_s} .. u_k its first forwards after the resume still run on (tau_s = P-1-s);
    the resumed losses and final weights equal the uninterrupted reference. From a final
    checkpoint (run of k steps) and from a mid-run one (--ckpt-every k in a run of T)."""
    k, B_ = 3, (6 if P_ == 3 else B)
    base = ["--schedule", "pipedream", "--model", "toy", "--optimizer", "sgd", "--lr", str(LR),
            "--momentum", "0.9", "--weight-decay", str(WD), "--clip", str(CLIP),
            "--batch-size", str(B_), "--seq-len", str(L), "--seed", str(SEED), "--quiet",
            "--timeout", "60", "--eval-every", "0"] + (["--toy-tied"] if tied else [])
    a, b = tmp_path / "a", tmp_path / "b"
    first = ["--steps", str(T), "--ckpt-every", str(k)] if ckpt_every else ["--steps", str(k)]
    res = run_forked(base + first + ["--out", str(a)], P_, timeout=120)
    assert all(rc == 0 for rc, _ in res), [o[-2000:] for _, o in res]
    if ckpt_every:
        for s in range(P_):
            (a / f"ckpt_step{k}_stage{s}.pt").replace(a / f"ckpt_stage{s}.pt")
            (a / f"ckpt_step{k}_stage{s}.pt.sha256").replace(a / f"ckpt_stage{s}.pt.sha256")   # its checksum
    for s in range(P_):
        assert sorted(torch.load(a / f"ckpt_stage{s}.pt")["versions"]) == list(range(max(0, k - (P_ - 1 - s)), k + 1))
    res = run_forked(base + ["--steps", str(T), "--out", str(b), "--resume", str(a)], P_, timeout=120)
    assert all(rc == 0 for rc, _ in res), [o[-2000:] for _, o in res]
    log = [json.loads(line) for line in open(b / "log.jsonl")]
    losses, x, _, _ = reference("pipedream", tied, P=P_, B=B_)
    assert [r["step"] for r in log] == list(range(k + 1, T + 1))
    assert [r["train_loss"] for r in log] == pytest.approx(losses[k:], rel=1e-5, abs=1e-6)
    got = {}
    for s in range(P_):
        got.update(torch.load(b / f"ckpt_stage{s}.pt")["params"])
    assert set(got) == set(x)
    for name in x:
        torch.testing.assert_close(got[name], x[name], rtol=1e-5, atol=1e-5)
