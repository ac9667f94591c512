"""Pipeline schedules as per-stage action lists, and a unit-time simulator that checks them.

A schedule for P stages is ``P`` lists of :class:`Action`; stage s executes its list in
order. Kinds:

- ``F`` mb: forward of global microbatch ``mb`` on the stage's *current* weight version
  (the version is stashed with the microbatch, so its backward uses the same one).
- ``B`` mb: backward of ``mb``; its gradient is accumulated into the gradient of ``step``.
- ``R`` step: the gradient of ``step`` is complete on this stage; start the cross-stage
  all-reduce of its squared norm (global-norm clipping, asynchronous).
- ``E`` step: forward-only evaluation of the validation batches on the current version
  (inserted by :func:`with_evals`).
- ``U`` step: wait for that all-reduce, compute d_step with the stage's optimizer and
  create the next weight version ``current + d_step`` (``apply=False``: compute d_step
  into the optimizer state but create no version, the last 2BW step).

Weight semantics (x_t = version t, g_t the gradient of step t, d_t = opt(g_t)):

- ``gpipe`` / ``1f1b`` (flush each step): step t = microbatches tM .. tM+M-1, all on
  x_t; ``x_{t+1} = x_t + d_t`` (sync).
- ``2bw`` (1F1B, no flush): step t's microbatches all run on x_t; ``U(t)`` comes right
  before ``F((t+2)M)``, so ``x_{t+2} = x_{t+1} + d_t`` with ``x_1 = x_0``: the delayed
  recursion ``x_{t+1} = x_t + d_{t-1}``, d_{-1} = 0, delay 1 at every stage. Needs M >= P.
  With ``sync_start`` / ``sync_cooldown`` (the trainer's mitigations) the synchronous
  steps are flushed 1F1B steps and each maximal asynchronous run of steps a .. b-1 is
  such a stream on its own (steps a and a+1 both on x_a; U(b-1) creates nothing, its
  d_{b-1} is applied by the flushed U(b) together with d_b).
- ``pipedream`` (1F1B, no flush, one update per microbatch): step = microbatch;
  stage s forwards microbatch k on u_{k - tau_s}, tau_s = P - 1 - s (u_{<0} = u_0), and
  ``u_{k+1} = u_k + d_k`` right after ``B(k)``.
"""
from __future__ import annotations

from typing import NamedTuple

from lmo.delay import phase

#: the schedules' names, the delay kind each one runs and their checks live with the run spec's
#: parallelism section (gpu_runs.parallelism)
from gpu_runs.parallelism import SYNC_SCHEDULES, check_schedule_args, check_sync_args


class Action(NamedTuple):
    kind: str  # "F", "B", "R", "U"
    mb: int  # global microbatch index (-1 for R / U)
    step: int  # optimizer step the action belongs to
    apply: bool = True  # U only: create the next version


def _one_f_one_b(stage: int, num_stages: int, first: int, count: int) -> list[tuple[str, int]]:
    """1F1B order of ``count`` microbatches from ``first``: min(P-1-s, count) warm-up forwards,
    then alternate F, B, then the remaining backwards."""
    warm = min(num_stages - 1 - stage, count)
    out = [("F", first + i) for i in range(warm)]
    for i in range(count - warm):
        out += [("F", first + warm + i), ("B", first + i)]
    out += [("B", first + i) for i in range(count - warm, count)]
    return out


def segments(steps: int, sync_start: int = 0, sync_cooldown: int = 0) -> list[tuple[str, int, int]]:
    """Maximal runs ``(phase, a, b)`` of steps a .. b-1 with one phase of
    :func:`lmo.delay.phase` ('sync': t < K or t >= T - K_c; else 'async')."""
    out: list = []
    for t in range(steps):
        ph = phase(t, sync_start, sync_cooldown, steps)
        if out and out[-1][0] == ph:
            out[-1][2] = t + 1
        else:
            out.append([ph, t, t + 1])
    return [tuple(x) for x in out]


def _flushed_step(schedule: str, stage: int, P: int, M: int, t: int) -> list[Action]:
    if schedule == "gpipe":
        order = [("F", t * M + i) for i in range(M)] + [("B", t * M + i) for i in range(M)]
    else:
        order = _one_f_one_b(stage, P, t * M, M)
    return [Action(k, mb, t) for k, mb in order] + [Action("R", -1, t), Action("U", -1, t)]


def _two_bw(stage: int, P: int, M: int, a: int, b: int, s0: int, lag: int = 2) -> list[Action]:
    """2BW over the asynchronous steps a .. b-1 (resumed at s0 >= a): one 1F1B stream,
    R(t) after the last backward of step t, U(t) right before the first forward of step
    t + 2 (steps a and a + 1 both run on x_a: nothing is pending at a). The tail: U(b-2)
    creates x_b; U(b-1) only computes d_{b-1}, the pending update (apply=False).
    ``lag=1`` (a stage whose update applies at once, ``parallelism.applies_at_once``): U(t)
    right before the first forward of step t + 1, creating x_{t+1}; U(b-1) creates x_b."""
    acts: list[Action] = []
    for kind, mb in _one_f_one_b(stage, P, s0 * M, (b - s0) * M):
        t = mb // M
        if kind == "F" and mb % M == 0 and t >= max(a + lag, s0 + 1):
            acts.append(Action("U", -1, t - lag))
        acts.append(Action(kind, mb, t))
        if kind == "B" and mb % M == M - 1:
            acts.append(Action("R", -1, t))
    done = {x.step for x in acts if x.kind == "U"}
    for t in range(max(a, s0 - (lag - 1)), b):
        if t not in done:
            acts.append(Action("U", -1, t, apply=t + 1 < b or lag == 1))
    return acts


def stage_actions(schedule: str, stage: int, num_stages: int, microbatches: int,
                  steps: int, start: int = 0, sync_start: int = 0,
                  sync_cooldown: int = 0, flushed: bool = False, lag: int = 2) -> list[Action]:
    """The action list of ``stage`` (0-based) for optimizer steps ``start .. steps-1``.

    ``microbatches`` is M per step for gpipe / 1f1b / 2bw; for pipedream every microbatch
    is its own step (M is not used: the schedule streams ``steps`` microbatches).

    2bw with ``sync_start=K`` / ``sync_cooldown=K_c`` (the trainer's mitigations,
    :func:`lmo.delay.phase`): the synchronous steps t < K and t >= T - K_c run as flushed
    1F1B steps, each U(t) creating x_{t+1} = x_t + a_t (a_t the trainer's applied update;
    at the cooldown switch a_t = d_{t-1} + d_t flushes the pending one); the asynchronous
    steps between run as the 2BW stream of :func:`_two_bw`. Every U with ``apply=True``
    creates exactly one version.

    ``start > 0`` resumes after ``start`` steps: the list holds the full run's F / B from
    microbatch ``start * M`` on. 2bw: when steps start - 1 and start are both
    asynchronous, it begins (before F((start+1)M)) with U(start - 1), which only creates
    x_{start+1} from the checkpoint's pending update. pipedream: a fresh 1F1B warm-up
    from microbatch ``start``; stage s's forwards of start .. start + tau_s - 1 run on the
    stashed versions u_{k - tau_s} of the checkpoint.

    2bw with ``flushed`` (``gpu_runs.parallelism.flushed_steps``: a group left synchronous,
    delay 0 on every stage): every step a flushed 1F1B step, U(t) creating
    x_{t+1} = x_t + a_t from the stage wrapper's own update. ``lag=1`` (2bw, the stage whose
    update applies at once, ``gpu_runs.parallelism.applies_at_once``): this stage's U(t) comes
    right before step t + 1's first forward, the other stages' stream unchanged.
    """
    check_schedule_args(schedule, num_stages, microbatches, steps)
    check_sync_args(schedule, steps, sync_start, sync_cooldown)
    if not 0 <= stage < num_stages:
        raise ValueError(f"stage must lie in [0, {num_stages}), got {stage}")
    if not 0 <= start < steps:
        raise ValueError(f"start must lie in [0, steps={steps}), got {start}")
    if lag not in (1, 2):
        raise ValueError(f"lag must be 1 or 2 (2bw: U(t) before step t + lag's first forward), got {lag}")
    P, M = num_stages, microbatches
    acts: list[Action] = []
    if schedule in SYNC_SCHEDULES or (flushed and schedule == "2bw"):
        for t in range(start, steps):
            acts += _flushed_step("1f1b" if flushed else schedule, stage, P, M, t)
        return acts
    if schedule == "pipedream":
        for kind, mb in _one_f_one_b(stage, P, start, steps - start):
            acts.append(Action(kind, mb, mb))
            if kind == "B":
                acts += [Action("R", -1, mb), Action("U", -1, mb)]
        return acts
    for ph, a, b in segments(steps, sync_start, sync_cooldown):
        if b <= start:
            continue
        if ph == "sync":
            for t in range(max(a, start), b):
                acts += _flushed_step("1f1b", stage, P, M, t)
        else:
            acts += _two_bw(stage, P, M, a, b, max(a, start), lag)
    return acts


def all_actions(schedule: str, num_stages: int, microbatches: int, steps: int,
                sync_start: int = 0, sync_cooldown: int = 0) -> list[list[Action]]:
    return [stage_actions(schedule, s, num_stages, microbatches, steps, sync_start=sync_start,
                          sync_cooldown=sync_cooldown) for s in range(num_stages)]


# ----------------------------------------------------------------------------- simulator
class SimResult(NamedTuple):
    makespan: float  # time to finish all stages
    busy: list  # compute time per stage
    versions: dict  # (stage, mb) -> weight version its forward used
    grad_versions: dict  # (stage, step) -> set of versions step's microbatches used
    eval_versions: dict  # (stage, step) -> version an E(step) evaluated


def simulate(acts: list[list[Action]], t_fwd: float = 1.0, t_bwd: float = 2.0,
             global_clip: bool = True) -> SimResult:
    """Run the action lists with F taking ``t_fwd``, B ``t_bwd``, R / U free and
    communication instant. Dependencies: F(s, k) after F(s-1, k); B(s, k) after
    B(s+1, k); E(s, t) after E(s-1, t); with ``global_clip`` U(t) after R(t) on every stage (the all-reduce of
    squared gradient norms), else U(t) is local. Raises RuntimeError on a deadlock."""
    P = len(acts)
    pos = [0] * P
    clock = [0.0] * P
    busy = [0.0] * P
    f_done: dict = {}
    b_done: dict = {}
    r_done: dict = {}
    e_done: dict = {}
    eval_versions: dict = {}
    version = [0] * P
    versions: dict = {}
    grad_versions: dict = {}
    while any(pos[s] < len(acts[s]) for s in range(P)):
        progressed = False
        for s in range(P):
            while pos[s] < len(acts[s]):
                a = acts[s][pos[s]]
                if a.kind == "F":
                    if s > 0 and (s - 1, a.mb) not in f_done:
                        break
                    start = max(clock[s], f_done.get((s - 1, a.mb), 0.0))
                    clock[s] = start + t_fwd
                    busy[s] += t_fwd
                    f_done[(s, a.mb)] = clock[s]
                    versions[(s, a.mb)] = version[s]
                elif a.kind == "B":
                    if s < P - 1 and (s + 1, a.mb) not in b_done:
                        break
                    start = max(clock[s], b_done.get((s + 1, a.mb), 0.0))
                    clock[s] = start + t_bwd
                    busy[s] += t_bwd
                    b_done[(s, a.mb)] = clock[s]
                    grad_versions.setdefault((s, a.step), set()).add(versions[(s, a.mb)])
                elif a.kind == "R":
                    r_done[(s, a.step)] = clock[s]
                elif a.kind == "E":
                    if s > 0 and (s - 1, a.step) not in e_done:
                        break
                    clock[s] = max(clock[s], e_done.get((s - 1, a.step), 0.0))
                    e_done[(s, a.step)] = clock[s]
                    eval_versions[(s, a.step)] = version[s]
                else:  # U
                    peers = range(P) if global_clip else (s,)
                    if any((q, a.step) not in r_done for q in peers):
                        break
                    clock[s] = max([clock[s]] + [r_done[(q, a.step)] for q in peers])
                    if a.apply:
                        version[s] += 1
                pos[s] += 1
                progressed = True
        if not progressed:
            stuck = {s: acts[s][pos[s]] for s in range(P) if pos[s] < len(acts[s])}
            raise RuntimeError(f"schedule deadlocks; stages wait at {stuck}")
    return SimResult(max(clock), busy, versions, grad_versions, eval_versions)


def ideal_bubble_ratio(num_stages: int, microbatches: int) -> float:
    """Time of a flushed step over its busy time, (M + P - 1) / M (GPipe / 1F1B)."""
    return (microbatches + num_stages - 1) / microbatches


def with_evals(actions: list[Action], schedule: str, microbatches: int, eval_steps) -> list[Action]:
    """Insert ``E`` (t) actions: a forward-only evaluation on x_{t+1}, the weights after
    step t's update (for 2bw: after the update that follows step t, x_{t+1} = x_t + d_{t-1}).

    Placement: sync / pipedream right after ``U(t)``; 2bw right before ``F((t+1)M)``
    (where x_{t+1} is current) or at the end for the last step. On every stage E(t)
    precedes E(t') for t < t', so evaluation messages match in order.
    """
    eval_steps = set(eval_steps)
    out: list[Action] = []
    pending_2bw = sorted(eval_steps)
    for a in actions:
        if schedule == "2bw" and a.kind == "F" and a.mb % microbatches == 0:
            while pending_2bw and pending_2bw[0] + 1 <= a.mb // microbatches:
                out.append(Action("E", -1, pending_2bw.pop(0)))
        out.append(a)
        if schedule != "2bw" and a.kind == "U" and a.step in eval_steps:
            out.append(Action("E", -1, a.step))
    if schedule == "2bw":
        # the tail: x_T exists once U(T-2) ran, i.e. at the end of the list
        out += [Action("E", -1, t) for t in pending_2bw]
    return out
