"""Ctrl-C (issue 39, item 4): a real SIGINT to the process group of a real
``python -m gpu_runs.train`` / 2-rank ``python -m gpu_runs.pipeline`` stops it at once:
exit status 130, one line naming the newest intact checkpoint and the command that resumes,
no traceback, no process left; the trainer's resume command continues bit for bit."""
import json
import shlex
import sys

import torch
from process_group import interrupt_when, start, survivors

from gpu_runs import verified_files
from gpu_runs.pipeline.checkpoint import find_set, logged_step, stage_file
from gpu_runs.recipe import TrainConfig
from gpu_runs.train import main, train

STEPS = ["--steps", "12", "--batch-size", "4", "--seq-len", "16", "--eval-every", "2", "--eval-batches", "1"]
FAST = dict(config="tiny", steps=12, batch_size=4, seq_len=16, eval_every=2, eval_batches=1)


def test_ctrl_c_stops_the_trainer_and_its_resume_command_continues(tmp_path, capsys):
    out = tmp_path / "run"
    p = start([sys.executable, "-m", "gpu_runs.train", *STEPS, "--out", str(out)], slow_step_s=0.3)
    _, err = interrupt_when(p, lambda: (out / "ckpt_step4.pt.sha256").exists())
    assert p.returncode == 130, err[-3000:]
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    line = err.strip()
    head, cmd = line.split("; resume with: ")
    k = int(head.split("(step ")[1].rstrip(")"))
    assert head == f"python -m gpu_runs.train: interrupted; newest checkpoint {out}/ckpt_step{k}.pt (step {k})"
    assert 4 <= k < 12 and verified_files.check(out / f"ckpt_step{k}.pt") is None
    assert not [f for f in out.iterdir() if f.name.endswith(".tmp")]
    assert survivors(p.pid) == []
    argv = shlex.split(cmd)
    assert argv[:3] == ["python", "-m", "gpu_runs.train"] and argv[-1] == "--resume"
    assert main(argv[3:]) == 0                                     # the printed command, as printed
    assert f"resumed at step {k} from" in capsys.readouterr().out
    whole = train(TrainConfig(**FAST), progress=False)
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["val_loss"] for r in log if "val_loss" in r] == [r["val_loss"] for r in whole.log if "val_loss" in r]
    final = torch.load(out / "ckpt.pt", weights_only=True)["params"]
    assert all(torch.equal(final[n], whole.params[n]) for n in whole.params)


#: the ranks of a pipeline started as a terminal's job would have them: children of one
#: launcher in one process group (the launcher survives Ctrl-C only to report their exit)
LAUNCH = """
import os, signal, subprocess, sys
from gpu_runs.pipeline.launch import free_port
signal.signal(signal.SIGINT, lambda *a: None)
port, argv = free_port(), sys.argv[1:]
procs = [subprocess.Popen([sys.executable, "-m", "gpu_runs.pipeline", *argv], env=dict(os.environ, RANK=str(r),
         LOCAL_RANK=str(r), WORLD_SIZE="2", LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)))
         for r in range(2)]
sys.exit(max(p.wait() for p in procs))
"""


def test_ctrl_c_stops_every_pipeline_rank(tmp_path):
    out = tmp_path / "pp"
    argv = ["--schedule", "2bw", "--model", "toy", "--optimizer", "sgd", "--batch-size", "2", "--seq-len", "8",
            "--microbatches", "2", "--eval-every", "0", "--steps", "100000", "--ckpt-every", "20",
            "--out", str(out), "--quiet"]
    p = start([sys.executable, "-c", LAUNCH, *argv])
    # ready once the step-20 set is whole and the log reaches it: the last stage checkpoints
    # step 20 before it logs step 20, and a set the log does not reach is not resumed from
    # (gpu_runs.pipeline.checkpoint._sets), so waiting for the sidecars alone races the log
    _, err = interrupt_when(p, lambda: all(verified_files.sidecar(stage_file(out, s, 20)).exists() for s in range(2))
                            and (logged_step(out) or 0) >= 20)
    assert p.returncode == 130, err[-3000:]
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    line = err.strip()
    k, _ = find_set(out, 2)                       # the newest set intact on both ranks
    assert line.startswith(f"[pipeline rank 0/2] gpu_runs.pipeline: interrupted; newest checkpoint "
                           f"{out}/ckpt_step{k}_stage{{s}}.pt (step {k}, every stage); resume with: ")
    assert line.endswith(shlex.join(["python", "-m", "gpu_runs.pipeline.torchrun", "--nproc-per-node", "2", "-m", "gpu_runs.pipeline", *argv,
                                     "--resume"]))
    assert not [f for f in out.iterdir() if f.name.endswith(".tmp")]
    assert survivors(p.pid) == []


def test_the_line_without_a_checkpoint_says_how_to_start_again(tmp_path):
    from gpu_runs import interrupt
    (tmp_path / "run").mkdir()
    assert interrupt.trainer_line(tmp_path / "run", ["--out", str(tmp_path / "run")]) == (
        f"python -m gpu_runs.train: interrupted; no checkpoint to resume from: start again with another "
        f"--out, or remove {tmp_path / 'run'}")
    assert interrupt.trainer_line(None, []) == "python -m gpu_runs.train: interrupted (no --out: nothing was saved)"
