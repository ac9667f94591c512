"""Every refusal leaves nothing behind (issue 50, the class "state a refusal leaves"), the
trainer's and the pipeline's: for each way a command is refused, the tree around ``--out`` is
compared before and after. A refusal creates no file, no directory and no lock, changes no
byte of what was there, and removes nothing but what a killed writer left (its temporary
files and its stale lock file: the trainer sweeps them under its lock before its checks);
its message is one line, exit 2.

The pipeline's refusals come before any process group, so ``gpu_runs.pipeline.main`` runs
here in-process with torchrun's environment. A killed pipeline writer's temporary files are
removed by the next run that holds the rank's lock (``sweep_temps``), never by a refusal."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_runs import run_lock, verified_files
from gpu_runs.checkpoint import save_checkpoint
from gpu_runs.pipeline import build_parser
from gpu_runs.pipeline import main as pipeline_main
from gpu_runs.pipeline import worker
from gpu_runs.pipeline.checkpoint import stage_file, sweep_temps, writes
from gpu_runs.train import main as train_main

TRAIN = ["--steps", "2", "--batch-size", "2", "--seq-len", "16", "--eval-every", "2", "--eval-batches", "1"]
TOY = ["--model", "toy", "--optimizer", "sgd", "--toy-layers", "2", "--schedule", "1f1b", "--steps", "2",
       "--batch-size", "4", "--seq-len", "8", "--eval-every", "0"]
#: what a killed writer leaves: a checkpoint's and its sidecar's temporary files, a stale lock
KILLED = {".ckpt_step2.pt.a1b2c3d4.tmp": b"half", ".ckpt_step2.pt.sha256.a1b2c3d4.tmp": b"",
          ".log.jsonl.e5f6g7h8.tmp": b"{"}


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root``: a file's bytes, None for a directory."""
    return {str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes()) for p in sorted(root.rglob("*"))}


def garbage(name: str) -> bool:
    base = Path(name).name
    return verified_files.is_temp_name(base) or base.startswith(run_lock.LOCK)


def assert_left_nothing(before: dict, after: dict) -> None:
    new = sorted(set(after) - set(before))
    assert not new, f"the refusal created {new}"
    changed = sorted(k for k in before if k in after and before[k] != after[k])
    assert not changed, f"the refusal changed {changed}"
    lost = sorted(k for k in set(before) - set(after) if not garbage(k))
    assert not lost, f"the refusal removed {lost}"


def train_rc(argv: list[str]) -> int:
    """The trainer's exit status (an option refused by its parser exits through SystemExit)."""
    try:
        return train_main(argv)
    except SystemExit as e:
        return e.code


def one_line(err: str, *words: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and all(w in err for w in words), err


def cases(refusals: dict) -> list:
    """(case, killed): every case on a clean tree, and again after a kill where it holds a run."""
    return [pytest.param(c, k, id=f"{c}{' after a kill' if k else ''}")
            for c, (_, holds, _) in sorted(refusals.items()) for k in ((False, True) if holds == "run" else (False,))]


# ----------------------------------------------------------------------------- the trainer
@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A finished 2-step trainer run (its own directory; tests copy it)."""
    out = tmp_path_factory.mktemp("trained") / "run"
    assert train_main([*TRAIN, "--out", str(out)]) == 0
    return out


def _copy(src: Path, dst: Path, killed: bool) -> Path:
    dst.mkdir()
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    if killed:
        for n, b in KILLED.items():
            (dst / n).write_bytes(b)
        (dst / run_lock.LOCK).write_text("999999\n")    # the kernel dropped the lock; the file stays
    return dst


TRAINER_REFUSALS = {
    "resume into a directory that does not exist": (lambda out: ["--resume"], None, "no checkpoint"),
    "resume of a different run": (lambda out: ["--resume", "--lr", "0.5"], "run", "lr: None -> 0.5"),
    "fresh run over a run": (lambda out: [], "run", "already holds a run"),
    "out under a file": (lambda out: [], "file", "cannot be used as a run directory"),
    "tau at least steps": (lambda out: ["--delay", "2bw", "--tau", "2"], None, "--tau"),
    "memory": (lambda out: ["--delay", "2bw", "--tau", "100000", "--steps", "200000"], None, "--tau"),
}


@pytest.mark.parametrize("case, killed", cases(TRAINER_REFUSALS))
def test_a_trainer_refusal_leaves_nothing(case, killed, trained, tmp_path, capsys):
    extra, holds, word = TRAINER_REFUSALS[case]
    out = tmp_path / "run"
    if holds == "run":
        _copy(trained, out, killed)
    elif holds == "file":
        (tmp_path / "file").write_text("x")
        out = tmp_path / "file" / "run"
    before = tree(tmp_path)
    capsys.readouterr()
    assert train_rc([*TRAIN, "--out", str(out), *extra(out)]) == 2
    one_line(capsys.readouterr().err, word)
    assert_left_nothing(before, tree(tmp_path))


def test_a_trainer_refused_by_a_second_writer_leaves_nothing(trained, tmp_path, capsys):
    out = _copy(trained, tmp_path / "run", killed=False)
    fd = run_lock.acquire(out)
    try:
        before = tree(tmp_path)
        assert train_rc([*TRAIN, "--out", str(out), "--resume"]) == 2
        assert_left_nothing(before, tree(tmp_path))
    finally:
        run_lock.release(fd, out / run_lock.LOCK)
    one_line(capsys.readouterr().err, "in use by another run")


# ----------------------------------------------------------------------------- the pipeline
@pytest.fixture
def torchrun_env(monkeypatch):
    for k, v in dict(RANK="0", WORLD_SIZE="2", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1").items():
        monkeypatch.setenv(k, v)


def _pipeline_run(d: Path, killed: bool) -> Path:
    """A finished toy pipeline run's files (a final set of 2 stage checkpoints and a log)."""
    args = vars(build_parser().parse_args(TOY)) | dict(microbatches=2)
    d.mkdir()
    for s in range(2):
        save_checkpoint(stage_file(d, s), dict(step=2, schedule="1f1b", args=json.dumps(args)))
    (d / "log.jsonl").write_text('{"step": 1}\n{"step": 2}\n')
    if killed:
        for n in (".ckpt_stage0.pt.a1b2c3d4.tmp", ".ckpt_step2_stage1.pt.sha256.a1b2c3d4.tmp"):
            (d / n).write_bytes(b"half")
    return d


PIPELINE_REFUSALS = {
    "resume into a directory that does not exist": (["--resume"], None, "no complete set"),
    "resume of another directory that does not exist": (["--resume", "{tmp}/nowhere"], None, "no complete set"),
    "resume of a different run": (["--resume", "--lr", "0.5"], "run", "lr: None -> 0.5"),
    "fresh run over a run": ([], "run", "already holds a run"),
    "out under a file": ([], "file", "cannot be used as a run directory"),
    "tau at least steps": (["--schedule", "2bw", "--tau", "2"], None, "--tau"),
}


@pytest.mark.parametrize("case, killed", cases(PIPELINE_REFUSALS))
def test_a_pipeline_refusal_leaves_nothing(case, killed, tmp_path, torchrun_env, capsys):
    extra, holds, word = PIPELINE_REFUSALS[case]
    out = tmp_path / "run"
    if holds == "run":
        _pipeline_run(out, killed)
    elif holds == "file":
        (tmp_path / "file").write_text("x")
        out = tmp_path / "file" / "run"
    before = tree(tmp_path)
    extra = [a.replace("{tmp}", str(tmp_path)) for a in extra]
    assert pipeline_main([*TOY, "--out", str(out), *extra]) == 2
    one_line(capsys.readouterr().err, "refused:", word)
    assert tree(tmp_path) == before      # a pipeline refusal removes nothing either


def test_a_pipeline_refused_under_its_lock_leaves_no_lock_nor_directory(tmp_path, torchrun_env, monkeypatch, capsys):
    """The fresh-run check again under the lock (a run that started in between) refuses after
    the lock created ``--out`` and its lock file: both go."""
    def late(job):
        raise ValueError("--out holds a run that started meanwhile")
    monkeypatch.setattr(worker, "check_fresh", late)
    before = tree(tmp_path)
    assert pipeline_main([*TOY, "--out", str(tmp_path / "run")]) == 2
    one_line(capsys.readouterr().err, "refused:", "meanwhile")
    assert tree(tmp_path) == before


def test_a_rank_other_than_0_is_silent_on_a_refusal_every_rank_makes(tmp_path, torchrun_env, monkeypatch, capsys):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert pipeline_main([*TOY, "--out", str(tmp_path / "run"), "--resume"]) == 2
    assert capsys.readouterr().err == ""
    fd = run_lock.acquire(tmp_path / "held", 1)     # its own lock: only this rank can say it
    try:
        assert pipeline_main([*TOY, "--out", str(tmp_path / "held")]) == 2
    finally:
        run_lock.release(fd, tmp_path / "held" / run_lock.lock_name(1))
    one_line(capsys.readouterr().err, "[pipeline rank 1/2] refused:", "in use by another run")


def test_a_rank_sweeps_only_its_own_temporary_files(tmp_path):
    """What a killed writer of each rank left; rank 1 of P = 2 (the last stage) takes its own."""
    names = {"ckpt_stage0.pt": 0, "ckpt_stage1.pt": 1, "ckpt_stage1.pt.sha256": 1, "ckpt_step4_stage1.pt": 1,
             "ckpt_step4_stage0.pt.sha256": 0, "config.json": 1, "log.jsonl": 1, "comm_rank0.json": 0,
             "comm_rank1.json": 1, "ckpt_step4_stage11.pt": None}
    assert {n: writes(n, 1, 2) for n in names} == {n: r == 1 for n, r in names.items()}
    assert writes("comm_rank3.json", 3, 2) and not writes("ckpt_stage1.pt", 3, 2)   # replica 1 writes no checkpoint
    (tmp_path / "diag").mkdir()
    for n in names:
        (tmp_path / f".{n}.a1b2c3d4.tmp").write_bytes(b"")
    (tmp_path / "diag" / ".ckpt_step4_stage1.pt.a1b2c3d4.tmp").write_bytes(b"")
    gone = sweep_temps(tmp_path, 1, 2)
    assert sorted(gone) == sorted([f".{n}.a1b2c3d4.tmp" for n, r in names.items() if r == 1]
                                  + [".ckpt_step4_stage1.pt.a1b2c3d4.tmp"])
    left = sorted(p.name for p in tmp_path.glob(".*.tmp"))
    assert left == sorted(f".{n}.a1b2c3d4.tmp" for n, r in names.items() if r != 1)


@pytest.mark.parametrize("rank, lines", [("0", 1), ("1", 0)])
def test_ctrl_c_before_training_is_rank_0s_one_line(rank, lines, tmp_path, torchrun_env, monkeypatch, capsys):
    """Ctrl-C reaches every rank while they check the run: rank 0 says it, the others exit quietly."""
    def interrupted(*a, **kw):
        raise KeyboardInterrupt
    monkeypatch.setenv("RANK", rank)
    monkeypatch.setattr(worker, "prepare", interrupted)
    assert pipeline_main([*TOY, "--out", str(tmp_path / "run")]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == lines and all("interrupted before training started" in line for line in err), err
    assert not (tmp_path / "run").exists()
