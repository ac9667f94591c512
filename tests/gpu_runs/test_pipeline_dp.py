"""Data parallel x pipeline parallel (``--dp D``, gpu_runs.pipeline.data_parallel) on CPU
over gloo, ranks forked single-threaded from the test process.

- toy model: ``--stages 2 --dp 2`` (4 processes) against the independent single-process
  simulator of test_pipeline_toy (sync / 2bw / 2bw + EF / pipedream, tied head too);
- tiny Llama: ``--dp 2`` equals ``--dp 1`` with the same global batch and equals the
  single-process trainer (``gpu_runs.train``), sync / 2bw / 2bw + EF x AdamW / Muon;
- one checkpoint per stage, resumable under another D; a dead replica ends every rank;
  refusals of bad --dp settings before any process group.
"""
import json

import pytest
import torch
import torch.distributed as dist

from gpu_runs import pipeline
from gpu_runs.pipeline.launch import run_forked
from tests.gpu_runs.test_pipeline_llama import STEPS, corpus_dir, pipeline_log, trainer_log  # noqa: F401
from tests.gpu_runs.test_pipeline_toy import B, CLIP, L, LR, M, SEED, T, WD, reference

GUARD = 120  # hang guard for the forked ranks, not a timing assertion


def toy_argv(schedule, out, extra=()):
    return ["--schedule", schedule, "--model", "toy", "--optimizer", "sgd", "--lr", str(LR),
            "--momentum", "0.9", "--weight-decay", str(WD), "--clip", str(CLIP),
            "--steps", str(T), "--batch-size", str(B), "--seq-len", str(L), "--seed", str(SEED),
            "--microbatches", str(M), "--out", str(out), "--quiet", "--timeout", "60",
            "--eval-every", "0", *extra]


def run_ok(argv, nproc):
    res = run_forked(argv, nproc, timeout=GUARD)
    assert all(rc == 0 for rc, _ in res), [o[-2000:] for _, o in res]
    return res


def stage_params(d, P=2):
    out = {}
    for s in range(P):
        out.update(torch.load(d / f"ckpt_stage{s}.pt")["params"])
    return out


def read_log(d):
    return [json.loads(line) for line in open(d / "log.jsonl")]


@pytest.mark.parametrize("case", [
    "2bw-ef-tied", "pipedream",
    pytest.param("gpipe", marks=pytest.mark.slow), pytest.param("1f1b", marks=pytest.mark.slow),
    pytest.param("2bw", marks=pytest.mark.slow), pytest.param("pipedream-tied", marks=pytest.mark.slow),
    pytest.param("1f1b-tied", marks=pytest.mark.slow),
])
def test_toy_dp2_equals_the_single_process_simulator(case, tmp_path):
    """Every schedule keeps its meaning under dp: the D = 2 replicas' averaged gradient is
    the whole batch's, so losses and final weights are the simulator's (x += d_t, d_{t-1},
    2 d_{t-1} - d_{t-2}, PipeDream's per-block delays)."""
    tied = case.endswith("-tied")
    schedule = case.replace("-tied", "")
    mode = {"gpipe": "sync", "1f1b": "sync"}.get(schedule, schedule)
    extra = (["--ef"] if "-ef" in schedule else []) + (["--toy-tied"] if tied else []) + ["--dp", "2"]
    run_ok(toy_argv(schedule.replace("-ef", ""), tmp_path, extra), 4)
    log = read_log(tmp_path)
    losses, x, _, _ = reference(mode, tied)
    assert [r["step"] for r in log] == list(range(1, T + 1))
    assert all(r["dp"] == 2 for r in log)
    torch.testing.assert_close(torch.tensor([r["train_loss"] for r in log]), torch.tensor(losses),
                               rtol=1e-5, atol=1e-5)
    got = stage_params(tmp_path)
    assert set(got) == set(x)
    for k in x:
        torch.testing.assert_close(got[k], x[k], rtol=1e-5, atol=1e-5, msg=k)


def test_one_checkpoint_per_stage_resumable_under_another_dp(tmp_path):
    """dp = 2 for 4 steps, --resume with dp = 1 to T (and dp = 1 -> dp = 2): the stage files
    are one per stage (replica 0 writes), and the continued run is the uninterrupted one."""
    losses, x, _, _ = reference("2bw-ef")
    for first, second in [(2, 1), (1, 2)]:
        a, b = tmp_path / f"a{first}", tmp_path / f"b{second}"
        run_ok(toy_argv("2bw", a, ["--ef", "--dp", str(first), "--steps", "4"]), 2 * first)
        assert sorted(f.name for f in a.glob("ckpt*.pt")) == ["ckpt_stage0.pt", "ckpt_stage1.pt"]
        run_ok(toy_argv("2bw", b, ["--ef", "--dp", str(second), "--resume", str(a)]), 2 * second)
        log = read_log(b)
        assert [r["step"] for r in log] == list(range(5, T + 1))
        assert [r["train_loss"] for r in log] == pytest.approx(losses[4:], rel=1e-5)
        got = stage_params(b)
        for k in x:
            torch.testing.assert_close(got[k], x[k], rtol=1e-5, atol=1e-5, msg=k)


@pytest.mark.parametrize("kind", ["exit", "raise"])
def test_a_dead_replica_ends_every_rank(kind, tmp_path):
    """Rank 3 (replica 1's last stage) dies at step 2: all four ranks exit non-zero."""
    argv = ["--schedule", "1f1b", "--model", "toy", "--optimizer", "sgd", "--batch-size", "4",
            "--seq-len", "8", "--microbatches", "2", "--eval-every", "0", "--steps", "50", "--quiet",
            "--timeout", "5", "--dp", "2", "--fault", f"3:2:{kind}"]
    res = run_forked(argv, 4, timeout=GUARD, tmp=str(tmp_path))    # failing ranks: their logs kept there
    codes = [rc for rc, _ in res]
    assert all(rc not in (0, None) for rc in codes), codes
    assert "[pipeline rank 0/4] error" in res[0][1], res[0][1][-2000:]


@pytest.mark.parametrize("world, extra, word", [
    (4, ["--dp", "3"], "--dp"),
    (4, ["--dp", "0"], "--dp"),
    (4, ["--dp", "2", "--batch-size", "6"], "--dp"),
    (4, ["--dp", "2", "--schedule", "pipedream", "--batch-size", "3"], "--dp"),
])
def test_bad_dp_refused_before_process_group(world, extra, word, monkeypatch, capsys):
    monkeypatch.setenv("WORLD_SIZE", str(world))
    monkeypatch.setenv("RANK", "0")
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    argv = ["--model", "toy", "--optimizer", "sgd", "--toy-layers", "4", "--microbatches", "2"]
    if "--schedule" not in extra:
        argv += ["--schedule", "1f1b"]
    rc = pipeline.main(argv + extra)
    assert rc == 2
    assert word in capsys.readouterr().err
    assert not dist.is_initialized()


# ----------------------------------------------------------------------------- tiny Llama
#: (schedule, trainer mode, EF) x optimizer; the default run keeps one representative
LLAMA = [("1f1b", "sync", False), ("2bw", "2bw", False), ("2bw", "2bw", True)]
#: max |loss difference| allowed: AdamW to float rounding; Muon's NS in bf16 (CPU's ns_dtype
#: auto) amplifies the ~1e-7 difference of summation orders (see test_pipeline_llama)
TOL = {"adamw": 2e-5, "muon": 1e-3}


def llama_case(schedule, mode, ef, optimizer, corpus, tmp):
    extra = ["--ef"] if ef else []
    want, want_p = trainer_log(mode, corpus, tmp / "train", optimizer=optimizer, **({"ef": True} if ef else {}))
    got1, p1 = pipeline_log(schedule, corpus, tmp / "dp1", extra, optimizer=optimizer)
    got2, p2 = dp2_log(schedule, corpus, tmp / "dp2", extra, optimizer)
    return want, got1, got2, want_p, p1, p2


def dp2_log(schedule, corpus, tmp, extra, optimizer):
    import tests.gpu_runs.test_pipeline_llama as ref
    argv = ["--schedule", schedule, "--config", "tiny", "--optimizer", optimizer, "--steps", str(ref.STEPS),
            "--batch-size", str(ref.B), "--seq-len", str(ref.T), "--seed", str(ref.SEED), "--data", corpus,
            "--eval-every", "4", "--eval-batches", "1", "--microbatches", "2", "--out", str(tmp),
            "--quiet", "--timeout", "60", "--dp", "2", *extra]
    run_ok(argv, 4)
    return read_log(tmp), stage_params(tmp)


@pytest.mark.parametrize("schedule, mode, ef, optimizer", [
    pytest.param(s, m, e, o, marks=[] if (e and o == "muon") else pytest.mark.slow)
    for s, m, e in LLAMA for o in ("adamw", "muon")])
def test_llama_dp2_equals_dp1_and_the_trainer(schedule, mode, ef, optimizer, corpus_dir, tmp_path):
    want, got1, got2, want_p, p1, p2 = llama_case(schedule, mode, ef, optimizer, corpus_dir, tmp_path)
    assert [r["step"] for r in got2] == [r["step"] for r in got1] == [r["step"] for r in want] \
        == list(range(1, STEPS + 1))
    for g2, g1, w in zip(got2, got1, want):
        assert g2["train_loss"] == pytest.approx(g1["train_loss"], abs=TOL[optimizer]), g2["step"]
        assert g2["train_loss"] == pytest.approx(w["train_loss"], abs=TOL[optimizer]), g2["step"]
        assert ("val_loss" in g2) == ("val_loss" in w)
        if "val_loss" in w:
            assert g2["val_loss"] == pytest.approx(w["val_loss"], abs=TOL[optimizer])
    if optimizer == "adamw":
        for k, v in want_p.items():
            torch.testing.assert_close(p2[k], v, rtol=1e-4, atol=1e-5, msg=k)


@pytest.mark.slow
def test_llama_dp2_diagnostics_equal_the_trainers(corpus_dir, tmp_path):
    """--diag-every under --dp 2: replica 0's stage snapshots, measured after the run, give
    the trainer's diagnostics (2bw)."""
    from tests.gpu_runs.test_pipeline_diag import EVERY, assert_diagnostics_equal
    want, _ = trainer_log("2bw", corpus_dir, tmp_path / "train", diag_every=EVERY)
    got, _ = dp2_log("2bw", corpus_dir, tmp_path / "dp2", ["--diag-every", str(EVERY)], "adamw")
    assert_diagnostics_equal(want, got)


@pytest.mark.parametrize("extra", [
    pytest.param(["--sync-start", "2", "--sync-cooldown", "1", "--dc-asgd", "0.5"], marks=pytest.mark.slow),
    pytest.param(["--ef", "--sync-start", "1", "--dc-asgd", "0.5", "--toy-tied"], marks=pytest.mark.slow),
])
def test_toy_2bw_mitigations_dp2_equal_dp1(extra, tmp_path):
    """The 2bw mitigations (sync start / cooldown, DC-ASGD's g + lambda g*g*(y_t - x_t) on the
    averaged gradient) give the same run with 2 replicas as with one."""
    run_ok(toy_argv("2bw", tmp_path / "dp1", extra), 2)
    run_ok(toy_argv("2bw", tmp_path / "dp2", extra + ["--dp", "2"]), 4)
    a, b = read_log(tmp_path / "dp1"), read_log(tmp_path / "dp2")
    assert [r["train_loss"] for r in b] == pytest.approx([r["train_loss"] for r in a], rel=1e-5)
    pa, pb = stage_params(tmp_path / "dp1"), stage_params(tmp_path / "dp2")
    for k in pa:
        torch.testing.assert_close(pb[k], pa[k], rtol=1e-5, atol=1e-5, msg=k)
