"""One run spec (issue 28, item 1): the pipeline's command line parses into the trainer's
TrainConfig (plus its parallelism section), is validated once by TrainConfig.validate,
and its options mean what the trainer's mean (eval_every 0: after the last step only;
ckpt_every 0: never, None: at every evaluation). The section leaves trainer runs' JSON,
and so paper_figs' keys, as they were."""
import ast
import dataclasses
import json
from pathlib import Path

import pytest

from gpu_runs.parallelism import Parallelism
from gpu_runs.pipeline import build_parser, main, prepare, run_spec
from gpu_runs.pipeline.args import PROCESS
from gpu_runs.pipeline.launch import run_forked
from gpu_runs.pipeline.worker import eval_steps_of
from gpu_runs.recipe import TrainConfig
from gpu_runs.train import main as train_main, parse_args, train

ROOT = Path(__file__).resolve().parents[2]
SHARED = ["--optimizer", "muon", "--lr", "0.01", "--momentum", "0.9", "--weight-decay", "0.05",
          "--grad-clip", "0.5", "--warmup-frac", "0.2", "--final-frac", "0.3", "--steps", "12",
          "--batch-size", "8", "--seq-len", "16", "--seed", "3", "--eval-every", "0", "--eval-batches", "2",
          "--ckpt-every", "0", "--device", "cpu", "--ns-dtype", "float32"]
TOY = ["--model", "toy", "--optimizer", "sgd", "--toy-layers", "2", "--schedule", "1f1b", "--steps", "3",
       "--batch-size", "4", "--seq-len", "8", "--eval-batches", "1", "--quiet"]


@pytest.mark.parametrize("schedule, trainer, P", [
    ("gpipe", ["--delay", "sync"], 2), ("1f1b", ["--delay", "sync"], 2),
    ("2bw", ["--delay", "2bw", "--ef", "--sync-start", "2", "--dc-asgd", "0.1"], 2),
    ("pipedream", ["--delay", "pipedream"], 2)])
def test_pipeline_cli_parses_into_the_trainers_config(schedule, trainer, P):
    extra = [a for a in trainer if not a.startswith("--delay") and a not in ("sync", "2bw", "pipedream")]
    run = run_spec(build_parser().parse_args(["--schedule", schedule, "-M", "4", *SHARED, *extra]), P)
    want = parse_args([*SHARED, *trainer, "--stages", str(P)])
    assert dataclasses.replace(run, parallel=Parallelism()) == want
    assert run.parallel == Parallelism(schedule, 4, 1)
    run.validate()
    assert "parallel" not in want.as_dict() and run.as_dict()["parallel"] == dict(schedule=schedule,
                                                                                microbatches=4, dp=1)


def test_microbatches_default_to_P_and_the_section_reads_back_from_json():
    run = run_spec(build_parser().parse_args(["--schedule", "2bw", "--dp", "2"]), 3)
    assert run.parallel == Parallelism("2bw", 3, 2) and run.stages == 3
    assert TrainConfig(**json.loads(json.dumps(run.as_dict()))) == run


def test_trainer_json_and_paper_figs_key_do_not_gain_the_section():
    from paper_figs.records.runs import full_config
    settings = dict(config="tiny", optimizer="adamw", mode="2bw", steps=30)
    # a trainer run's JSON has the keys it had before the stored delay and the sections (the
    # delay's newer fields tau, corrector, delay_profile, delayed_groups left out while off) ...
    keys = list(TrainConfig(**settings).as_dict())
    assert sorted(keys) == sorted([
        "config", "optimizer", "lr", "momentum", "weight_decay", "grad_clip", "warmup_frac", "final_frac",
        "mode", "stages", "ef", "sync_start", "sync_cooldown", "dc_asgd", "steps", "batch_size", "aux_groups",
        "seq_len", "eval_every", "eval_batches", "seed", "data", "data_sha256", "device", "out", "ckpt_every",
        "diag_every", "diag_micro", "log_every", "compile", "resume", "ns_dtype", "opt_kwargs"])
    # ... written section by section (gpu_runs.sections), the delay's flat keys where the delay is
    from gpu_runs.sections import SECTIONS
    in_sections = [f.name for cls in SECTIONS.values() for f in dataclasses.fields(cls) if f.name != "parallel"]
    at = in_sections.index("delay")
    assert keys == in_sections[:at] + ["mode", "stages", "ef", "sync_start", "sync_cooldown", "dc_asgd"] + \
        in_sections[at + 2:]
    assert "parallel" not in full_config(TrainConfig, settings)
    assert full_config(TrainConfig, dict(settings, parallel=Parallelism("2bw", 2)))["parallel"]["schedule"] == "2bw"


def test_eval_every_zero_is_the_last_step_in_both():
    run = run_spec(build_parser().parse_args(["--schedule", "1f1b", "--steps", "5", "--eval-every", "0"]), 2)
    assert eval_steps_of(run) == [4]
    assert eval_steps_of(dataclasses.replace(run, eval_every=2)) == [1, 3, 4]


def test_toy_pipeline_and_trainer_agree_on_eval_and_ckpt_every_zero(tmp_path):
    """--eval-every 0: one evaluation, after the last step; --ckpt-every 0: no checkpoint."""
    res = run_forked([*TOY, "--eval-every", "0", "--ckpt-every", "0", "--out", str(tmp_path / "p")], 2, timeout=60)
    assert all(rc == 0 for rc, _ in res), [o[-1000:] for _, o in res]
    log = [json.loads(x) for x in (tmp_path / "p" / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log if "val_loss" in r] == [3]
    assert not list((tmp_path / "p").glob("ckpt*"))
    res = run_forked([*TOY, "--eval-every", "2", "--out", str(tmp_path / "q")], 2, timeout=60)
    assert all(rc == 0 for rc, _ in res), [o[-1000:] for _, o in res]
    log = [json.loads(x) for x in (tmp_path / "q" / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log if "val_loss" in r] == [2, 3]          # None: at every evaluation
    assert sorted(p.name for p in (tmp_path / "q").glob("ckpt*.pt")) == [
        "ckpt_stage0.pt", "ckpt_stage1.pt", "ckpt_step2_stage0.pt", "ckpt_step2_stage1.pt"]

    out = tmp_path / "t"
    r = train(TrainConfig(config="tiny", steps=3, batch_size=2, seq_len=16, eval_every=0, eval_batches=1,
                          log_every=1, ckpt_every=0, device="cpu", out=str(out)), progress=False)
    assert [x["step"] for x in r.log if "val_loss" in x] == [3]
    assert not list(out.glob("ckpt*"))


@pytest.mark.parametrize("bad, option", [(["--eval-every", "-1"], "--eval-every"),
                                         (["--ckpt-every", "-3"], "--ckpt-every"),
                                         (["--warmup-frac", "1.5"], "--warmup-frac")])
def test_a_bad_value_is_refused_once_naming_the_option(bad, option, capsys, monkeypatch):
    calls = []
    real = TrainConfig.validate
    monkeypatch.setattr(TrainConfig, "validate", lambda self, **kw: (calls.append(kw), real(self, **kw))[1])
    assert main(["--schedule", "1f1b", "--steps", "4", *bad]) == 2
    err = capsys.readouterr().err
    assert len(calls) == 1 and err.count("refused") == 1 and option in err and "Traceback" not in err, err
    with pytest.raises(SystemExit):                                   # the trainer: the same message
        train_main(["--steps", "4", *bad])
    assert option in capsys.readouterr().err


def test_checks_run_once_on_a_good_command_line(tmp_path, monkeypatch):
    calls = []
    real = TrainConfig.validate
    monkeypatch.setattr(TrainConfig, "validate", lambda self, **kw: (calls.append(kw), real(self, **kw))[1])
    job, skipped = prepare(build_parser().parse_args(["--schedule", "2bw", "--out", str(tmp_path)]), 2)
    assert len(calls) == 1 and skipped == [] and job.run.delay.kind == "2bw" and job.M == 2


def test_pipeline_modules_read_only_process_knobs_from_the_command_line():
    """Downstream of args.run_spec the command line (``job.opts``) is read for PROCESS only."""
    bad = []
    for f in sorted((ROOT / "gpu_runs" / "pipeline").glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
                    and node.value.attr == "opts" and node.attr not in PROCESS):
                bad.append(f"{f.name}:{node.lineno} opts.{node.attr}")
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "opts" \
                    and node.attr not in PROCESS:
                bad.append(f"{f.name}:{node.lineno} opts.{node.attr}")
    assert not bad, bad
    llama = (ROOT / "gpu_runs" / "pipeline" / "llama.py").read_text()
    assert "torch.zeros(2, 2)" not in llama and "def train_config" not in llama
