"""Per-stage checkpoints of ``gpu_runs.pipeline``: the files, the resume, the checks that a
run directory holds this run.

A stage checkpoint after k steps (``ckpt_stage{s}.pt`` at the end, ``ckpt_step{k}_stage{s}.pt``
every ``--ckpt-every``) is taken at U(k - 1) and holds the trainer's checkpoint restricted
to the stage's parameter block:

- ``params``: x_k (2bw: U(k - 1) has already created x_{k+1}; the checkpoint holds x_k);
- ``opt_state``: the optimizer state after k updates, ``lmo.base.state_dict`` of the
  stage optimizer (sync / pipedream: the base optimizer; 2bw: the trainer's
  ``delayed`` / ``error_feedback`` wrapper, so its queue d_{k-1}, EF buffer d_{k-2} and
  step counter k come along);
- ``versions`` (pipedream): {j: u_j} for j = k - tau_s .. k, tau_s = P - 1 - s, the
  stashed versions the forwards of microbatches k .. k + tau_s - 1 run on;
- ``spec``: the run spec's own dict (JSON of ``TrainConfig.as_dict`` with the parallelism
  section flat, ``gpu_runs.pipeline.llama.spec_dict``), from which the resume check and the
  conversion rebuild the spec (``llama.spec_of``); ``process``: the process knobs that choose
  the model (``--model``, the toy's sizes). Older checkpoints hold ``args``, the command line
  as parsed, which ``gpu_runs.pipeline.args.run_spec`` still converts;
- ``ns_dtype``: the Newton-Schulz dtype the run computes in (``--ns-dtype auto`` resolved
  once, before any process group; ``--resume`` with auto reuses it, :func:`settle_ns_dtype`).

The trainer's single ``ckpt.pt`` and these files, one into the other:
:mod:`gpu_runs.pipeline.conversion`.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from lmo.base import state_dict

from gpu_runs import verified_files
from gpu_runs.interrupt import resume_command, stopped_line
from gpu_runs.checkpoint import RESUME_SAFE, config_differences, holds_run, save_checkpoint
from gpu_runs.pipeline.args import LAUNCHER, MODEL_KNOBS, Job, build_parser, run_spec
from gpu_runs.pipeline.llama import run_config, spec_dict, spec_of
from gpu_runs.recipe import resolved, resumed


# ----------------------------------------------------------------------------- Ctrl-C
def interrupted_line(out, P: int, world: int, argv: list[str] | None) -> str:
    """``gpu_runs.interrupt.stopped_line`` of a pipeline run of ``P`` stages (``world`` ranks)
    writing to ``out`` (None: no --out): the newest set of stage checkpoints intact on every
    stage (:func:`find_set`), and the command that resumes from it (through the quiet launcher,
    ``args.LAUNCHER``)."""
    prog = "gpu_runs.pipeline"
    if out is None:
        return f"{prog}: interrupted (no --out: nothing was saved)"
    try:
        k, _ = find_set(out, P)
    except ValueError:
        where = None
    else:
        where = (f"{out}/ckpt_stage{{s}}.pt (the final set)" if k is None
                 else f"{out}/ckpt_step{k}_stage{{s}}.pt (step {k}, every stage)")
    return stopped_line(prog, where, resume_command([*LAUNCHER, "--nproc-per-node", str(world), "-m",
                                                     "gpu_runs.pipeline"], argv),
                        f"start again with another --out, or remove {out}")


# ----------------------------------------------------------------------------- stage files
def stage_file(run_dir, s: int, step: int | None = None) -> Path:
    return Path(run_dir) / (f"ckpt_stage{s}.pt" if step is None else f"ckpt_step{step}_stage{s}.pt")


def writes(final: str, rank: int, P: int) -> bool:
    """Is ``final`` (a file name in ``--out`` or its ``diag/``) one that global rank ``rank`` of
    a P-stage pipeline writes? Its stage's checkpoints and their sidecars (replica 0 only),
    config.json and log.jsonl (replica 0's last stage), its own comm log. A rank that holds its
    lock removes the temporary files of these that a killed writer left (:func:`sweep_temps`)."""
    stage, replica = rank % P, rank // P
    name = final.removesuffix(verified_files.SUFFIX)
    if name == f"comm_rank{rank}.json":
        return True
    if replica != 0:
        return False
    if name in ("config.json", "log.jsonl"):
        return stage == P - 1
    return re.fullmatch(rf"ckpt_(step\d+_)?stage{stage}\.pt", name) is not None


def sweep_temps(out, rank: int, P: int) -> list[str]:
    """Remove the temporary files a killed writer of rank ``rank`` left in ``out`` and
    ``out/diag`` (only under that rank's lock: no writer of them is alive); the names removed."""
    gone = []
    for d in (Path(out), Path(out) / "diag"):
        if d.is_dir():
            gone += verified_files.remove_stale_temps(d, owns=lambda final: writes(final, rank, P))
    return gone


def save_stage(out: Path, rank: int, engine, step: int, job: Job, final: bool = False) -> None:
    """The stage checkpoint after ``step`` steps (module docstring), taken at U(step - 1);
    written atomically (temporary file, then os.replace)."""
    params = engine.ckpt_params if engine.ckpt_params is not None else engine.params
    schedule = job.run.parallel.schedule
    blob = dict(step=step, stage=rank, schedule=schedule, stages=engine.P, microbatches=job.M,
                ns_dtype=job.run.ns_dtype, params={k: v.detach().cpu() for k, v in params.items()},
                opt_state=state_dict(engine.opt_state), **spec_record(job))
    if job.run.delay.stale_point:   # pipedream: the stashed weight versions are the stale points
        blob["versions"] = engine.checkpoint_versions()
    save_checkpoint(stage_file(out, rank, None if final else step), blob)


def spec_record(job: Job) -> dict:
    """What a stage checkpoint records of its run: ``spec``, the run spec's own flat dict
    (``llama.spec_dict``: ``TrainConfig.as_dict`` with the parallelism section flat), and
    ``process``, the process knobs that choose the model (``args.MODEL_KNOBS``), both JSON."""
    return dict(spec=json.dumps(spec_dict(job.run)),
                process=json.dumps({k: getattr(job.opts, k) for k in MODEL_KNOBS}))


#: default cadence (--ckpt-every unset): the periodic sets older than the newest KEEP_SETS
#: are removed (stages drift by less than that, so a complete set always remains)
KEEP_SETS = 3


def prune_stage(out: Path, rank: int, step: int) -> None:
    """Remove this stage's periodic checkpoints older than the newest KEEP_SETS (default cadence)."""
    steps = sorted(k for k in _periodic_steps(out, rank) if k <= step)
    for k in steps[:-KEEP_SETS]:
        verified_files.remove(stage_file(out, rank, k))


def _periodic_steps(run_dir, s: int) -> list[int]:
    pre, suf = "ckpt_step", f"_stage{s}.pt"
    return [int(f.name[len(pre):-len(suf)]) for f in Path(run_dir).glob(f"{pre}*{suf}")
            if f.name[len(pre):-len(suf)].isdigit()]


def latest_set(run_dir, P: int) -> int | None:
    """Which checkpoint set ``--resume RUN_DIR`` continues from (:func:`find_set`)."""
    return find_set(run_dir, P)[0]


def _complete(path: Path) -> str | None:
    """None when ``path`` is an intact stage checkpoint (its sha256 sidecar matches, or it has
    none: written before checksums) that loads, else why not (one line naming the file)."""
    try:
        blob = verified_files.load(path, map_location="cpu")
    except OSError as e:
        return f"{path.name}: {e.strerror or e}"
    except verified_files.Damaged as e:
        return str(e)
    if not isinstance(blob, dict) or "step" not in blob:
        return f"{path.name}: not a stage checkpoint"
    return None


def logged_step(run_dir) -> int | None:
    """The last step ``run_dir/log.jsonl`` records (0: none; None: no readable log)."""
    try:
        lines = (Path(run_dir) / "log.jsonl").read_text().splitlines()
        return max((int(json.loads(line)["step"]) for line in lines if line.strip()), default=0)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _sets(run_dir, P: int) -> tuple[list[int | None], list[int]]:
    """(sets, ahead): the checkpoint sets every stage has a file of, newest first (the final
    files, k = None, then ``ckpt_step{k}``), and the periodic ones left out because the run's
    log stops before their step. The last stage checkpoints step k at U(k - 1), before step k's
    log record (an evaluation step's waits for E(k - 1)): a run that died in between has a set
    that the log does not reach, and a resume from it would lose step k's record. The final
    set is written after the last record."""
    run_dir = Path(run_dir)
    common = set(_periodic_steps(run_dir, 0))
    for s in range(1, P):
        common &= set(_periodic_steps(run_dir, s))
    upto = logged_step(run_dir)
    ahead = sorted((k for k in common if upto is not None and k > upto), reverse=True)
    sets = sorted(common - set(ahead), reverse=True)
    if all(stage_file(run_dir, s).exists() for s in range(P)):
        sets = [None] + sets
    return sets, ahead


def any_set(run_dir, P: int) -> bool:
    """Does every stage of ``run_dir`` have a checkpoint at the same step that its log reaches
    (:func:`_sets`), intact or not? (A damaged set is no first set never written.)"""
    return bool(_sets(run_dir, P)[0])


def find_set(run_dir, P: int) -> tuple[int | None, list[str]]:
    """(k, skipped): the newest complete set of stage checkpoints, tried in this order: the
    final files ``ckpt_stage{s}.pt`` when every stage has one (k = None), then the
    ``ckpt_step{k}_stage{s}.pt`` sets every stage has, largest k first (a killed run), but
    for a set the run's log does not reach (:func:`_sets`). A set is usable only when every
    stage's file in it is intact: one that fails its sha256 check (truncated, garbage, a
    flipped bit) or does not load makes the whole set skipped, and ``skipped`` says which file
    and why; ValueError when no complete set remains."""
    run_dir = Path(run_dir)
    sets, ahead = _sets(run_dir, P)
    skipped = [f"ckpt_step{k}_stage{{s}}.pt: written after the last record of log.jsonl (step "
               f"{logged_step(run_dir)})" for k in ahead]
    for k in sets:
        bad = [why for s in range(P) if (why := _complete(stage_file(run_dir, s, k))) is not None]
        if not bad:
            return k, skipped
        skipped += bad
    why = f" (unreadable: {'; '.join(skipped)})" if skipped else ""
    raise ValueError(f"--resume: no complete set of {P} stage checkpoints in {run_dir} "
                     f"(ckpt_stage{{s}}.pt or ckpt_step{{k}}_stage{{s}}.pt for s = 0..{P - 1}){why}; "
                     f"start a fresh run with another --out")


def run_identity(job: Job) -> dict:
    """What defines a pipeline run's trajectory: for --model llama its run spec as config.json
    records it (``llama.run_config``: defaults resolved, so ``--clip 1.0`` equals the default;
    the schedule, M and D flat); for the toy model its run spec but --steps (its lr is
    constant) with the toy's sizes. Compared on --resume outside ``gpu_runs.checkpoint.RESUME_SAFE``,
    the trainer's list (process knobs such as --timeout are no part of it)."""
    if job.opts.model == "llama":
        return run_config(job.run)
    toy = {k: getattr(job.opts, k) for k in MODEL_KNOBS}
    return {k: v for k, v in dict(spec_dict(job.run), **toy).items() if k != "steps"}


def recorded_ns_dtype(run_dir, ck: dict) -> str | None:
    """The Newton-Schulz dtype the run that wrote stage checkpoint ``ck`` computed in: the
    checkpoint's ``ns_dtype`` (:func:`save_stage`), else its recorded run spec's (or, in an older
    checkpoint, its recorded options') when concrete, else ``run_dir/config.json``'s
    (checkpoints written before the field); None when none names one."""
    value = ck.get("ns_dtype")
    if value in (None, "auto"):
        value = json.loads(ck["spec"] if "spec" in ck else ck["args"]).get("ns_dtype")
    if value in (None, "auto"):
        f = Path(run_dir) / "config.json"
        value = json.loads(f.read_text()).get("ns_dtype") if f.exists() else None
    return None if value in (None, "auto") else value


def settle_ns_dtype(job: Job, recorded: str | None = None) -> Job:
    """``job`` with the run spec's ns_dtype concrete (what config.json and every stage checkpoint
    record): "auto" takes ``recorded`` (the run's own, on --resume) or is resolved once from the
    machine (``gpu_runs.recipe.resolve_ns_dtype``: no timing, so every rank resolves alike)."""
    job.run = resumed(job.run, recorded) if recorded is not None else resolved(job.run)
    return job


def saved_run_job(run_dir, ck: dict, P: int) -> Job:
    """:func:`_saved_job` with the ns_dtype the saved run computed in (:func:`recorded_ns_dtype`)."""
    return settle_ns_dtype(_saved_job(ck, P), recorded_ns_dtype(run_dir, ck))


def check_same_run(job: Job, P: int) -> None:
    """ValueError listing the options that differ from the run that wrote ``--resume``'s set."""
    f = stage_file(job.opts.resume, 0, job.opts.resume_set)
    ck = load(f)
    saved = run_identity(saved_run_job(job.opts.resume, ck, P))
    diff = config_differences(saved, run_identity(job), RESUME_SAFE)
    if diff:
        raise ValueError(f"--resume: {f} was made by a different run; these options differ "
                         f"(saved -> now): {'; '.join(diff)}. Only {', '.join(RESUME_SAFE)} may change")


def check_run_dir(job: Job, P: int) -> list[str]:
    """The run-directory checks before any process group: ``--resume`` needs a complete set
    of checkpoints of the same run (sets ``job.opts.resume_set``); a fresh run never writes over
    an existing one. ``--ns-dtype auto`` is settled here, once (:func:`settle_ns_dtype`).
    Returns the unreadable checkpoints the resume skipped (:func:`find_set`)."""
    skipped, opts = [], job.opts
    if opts.resume is not None:
        opts.resume_set, skipped = find_set(opts.resume, P)
        ck = load(stage_file(opts.resume, 0, opts.resume_set))
        settle_ns_dtype(job, recorded_ns_dtype(opts.resume, ck))   # "auto": the run's own dtype
        check_same_run(job, P)
    else:
        settle_ns_dtype(job)
    check_fresh(job)
    return skipped


def check_finished(job: Job) -> None:
    """After :func:`check_run_dir`: :class:`RunFinished` when ``--resume``'s set has reached
    ``--steps`` (nothing to do; the caller exits 0 without writing)."""
    opts, steps = job.opts, job.run.steps
    if opts.resume is None:
        return
    step = int(load(stage_file(opts.resume, 0, opts.resume_set))["step"])
    if step >= steps:
        raise RunFinished(f"--resume: {opts.resume} finished already at step {step} (--steps "
                          f"{steps}); nothing to do, nothing was rewritten")


class RunFinished(ValueError):
    """``--resume`` of a run that has reached ``--steps``: nothing to do (exit 0)."""


def restartable(job: Job) -> bool:
    """A llama run that stopped before its first checkpoint set (a kill, a full disk): ``--out``
    holds its log but no set of checkpoints (:func:`any_set`: some stages may have written
    theirs, not every stage), the log stops before ``--steps``, and its config.json is this
    run's (no field outside ``RESUME_SAFE`` differs): the same command starts it again from
    step 0 (a run is a function of its configuration: nothing computed is lost; the stages'
    files of that first set are written again)."""
    out = Path(job.run.out)
    if job.opts.model != "llama" or job.opts.resume is not None or not holds_pipeline_run(out) \
            or any_set(out, job.run.stages):
        return False
    try:
        saved = json.loads((out / "config.json").read_text())
        steps = [json.loads(line)["step"] for line in (out / "log.jsonl").read_text().splitlines() if line.strip()]
    except (OSError, ValueError, KeyError):
        return False
    return max(steps, default=0) < job.run.steps and not config_differences(saved, run_config(job.run))


def check_fresh(job: Job) -> None:
    """A run that does not continue ``--out`` itself never writes over a run there, but for
    one of the same configuration that stopped before its first checkpoint (:func:`restartable`)."""
    out, resume = job.run.out, job.opts.resume
    if out is not None and holds_pipeline_run(Path(out)) and not restartable(job) and (
            resume is None or Path(resume).resolve() != Path(out).resolve()):
        raise ValueError(f"--out {out} already holds a run; pass --resume to continue "
                         f"it, or choose another --out (nothing was overwritten)")


def holds_pipeline_run(out: Path) -> bool:
    """A log with content, or any stage checkpoint."""
    return holds_run(out) or any(out.glob("ckpt_stage*.pt")) or any(out.glob("ckpt_step*_stage*.pt"))


def load(path) -> dict:
    """A stage checkpoint after its sha256 check (:func:`gpu_runs.verified_files.load`);
    ValueError naming the file when it is damaged or unreadable (OSError as is)."""
    try:
        return verified_files.load(path, map_location="cpu")
    except verified_files.Damaged as e:
        why = str(e).removeprefix(f"{Path(path).name}: ")
        raise ValueError(f"{path}: unreadable checkpoint ({why})") from None


def resume_step(job: Job) -> int:
    """The step ``--resume``'s checkpoint set is at (0 for a fresh run)."""
    opts = job.opts
    if opts.resume is None:
        return 0
    start = int(load(stage_file(opts.resume, 0, getattr(opts, "resume_set", None)))["step"])
    if start >= job.run.steps:
        raise ValueError(f"--resume: checkpoint is at step {start} >= --steps {job.run.steps}")
    return start


def load_resume(engine, job: Job, rank: int, P: int, M: int, start: int) -> None:
    """Restore ``engine`` from ``--resume``'s ``ckpt_stage{rank}.pt`` (same schedule, P, M)."""
    resume, k, schedule = job.opts.resume, getattr(job.opts, "resume_set", None), job.run.parallel.schedule
    ck = load(stage_file(resume, rank, k))
    if ck["schedule"] != schedule or ck.get("stages", P) != P or ck.get("microbatches", M) != M:
        raise ValueError(f"--resume: checkpoint is {ck['schedule']} P={ck.get('stages')} "
                         f"M={ck.get('microbatches')}, this run {schedule} P={P} M={M}")
    if int(ck["step"]) != start:
        raise ValueError(f"--resume: {stage_file(resume, rank, k)} is at step {ck['step']}, stage 0's at {start}")
    stale_point = job.run.delay.stale_point
    if stale_point and "versions" not in ck:
        raise ValueError("--resume: a pipedream checkpoint needs the stashed 'versions'")
    tied = None
    if engine.tied_role == "user":
        ck0 = load(stage_file(resume, 0, k))
        name = "embed.weight"
        tied = ({i: p[name] for i, p in ck0["versions"].items()} if stale_point
                else {0: ck0["params"][name]})
    try:
        engine.restore(ck["params"], ck["opt_state"], start, tied, ck.get("versions"))
    except KeyError as e:
        raise ValueError(f"--resume: optimizer state does not match this run's options ({e})") from None


# ----------------------------------------------------------------------------- trainer format
def _saved_job(ck: dict, P: int) -> Job:
    """The :class:`Job` of the run that wrote stage checkpoint ``ck``: its recorded run spec
    (``spec``, :func:`spec_record`; ``llama.spec_of``) with its model knobs over the parser's
    defaults; a checkpoint written before the spec was recorded holds the command line
    (``args``), which :func:`gpu_runs.pipeline.args.run_spec` converts as it did then."""
    args = build_parser().parse_args(["--schedule", ck["schedule"]])
    if "spec" in ck:
        vars(args).update(json.loads(ck["process"]))
        return Job(spec_of(json.loads(ck["spec"])), args)
    vars(args).update(json.loads(ck["args"]))
    return Job(run_spec(args, int(ck.get("stages", P))), args)
