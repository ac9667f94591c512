"""Multi-process pipeline-parallel training: ``python -m gpu_runs.pipeline.torchrun --nproc-per-node P
-m gpu_runs.pipeline`` (with ``--dp D``: ``--nproc-per-node P x D``, data parallel x pipeline parallel).
``gpu_runs.pipeline.torchrun`` is torchrun with the same arguments, silent after a rank's own
one-line refusal or interruption; plain ``torchrun`` works too, but its elastic agent prints a
ChildFailedError (or SignalException) traceback after any rank's non-zero exit, which no exit
status of a rank can avoid.

Each process is one stage (rank s holds layers ``split_layers(n, P)[s]``, the embedding
on the first, the final norm, head and loss on the last). Stages exchange activations
and gradients over torch.distributed P2P (gloo on CPU, NCCL on CUDA; every message kind on
a channel of its own, :mod:`gpu_runs.pipeline.channels`, because NCCL matches messages by
order and not by tag: ``--comm-log`` records them, and the tests check the order rule on
CPU) and run one of the schedules of :mod:`gpu_runs.pipeline.schedules`. ``--delay
{sync,2bw,ef,pipedream}`` is the trainer's and picks the schedule (sync: 1f1b, 2bw and ef: 2bw,
pipedream: pipedream); ``--schedule`` chooses among those that run the delay (a schedule that
cannot is refused, naming both flags), or alone names the delay it runs, with ``--ef`` an alias
of ``--delay ef``:

- ``gpipe``, ``1f1b``: flush every step; exact gradients, x_{t+1} = x_t + d_t (= --delay sync).
- ``2bw``: PipeDream-2BW, no flush, two weight versions, x_{t+1} = x_t + d_{t-1} (= --delay
  2bw; ``--ef``: x_{t+1} = x_t + 2 d_{t-1} - d_{t-2} = 2bw --ef). Needs M >= P. The trainer's
  longer and shaped delays run on it too, each stage wrapping its block with
  ``Delay.wrap(opt, taus=...)`` (``gpu_runs.pipeline.delay``): ``--tau K`` (x_{t+1} = x_t +
  d_{t-K}, the same stream, U(t) applying ``lmo.delay.next_applied``), ``--corrector lr_damping``,
  ``--corrector weight_prediction|nesterov_lookahead`` (step t's forward and backward at z_t =
  ``lmo.gradient_point``, computed by the stage: ``gpu_runs.pipeline.delay``; a tied head forwards
  on the first stage's z_t: ``gpu_runs.pipeline.comm``), ``--delay-profile pipedream`` (stage s
  delayed by P - 1 - s; the last stage, delay 0, runs its U(t) right before step t + 1:
  ``gpu_runs.parallelism.applies_at_once``), and as flushed 1F1B
  steps (``parallelism.flushed_steps``) ``--delayed-groups matrix|other`` (the synchronous group
  needs d_t before step t + 1). ``--corrector dc_asgd_adaptive|dc_asgd_ema`` correct g_t before the
  clip, as the trainer's: the stage runs the wrapper's two halves around the cross-stage clip.
- ``pipedream``: one update per microbatch, weight stashing, block delay tau_s = P-1-s
  (= --delay pipedream --stages P; each microbatch is one optimizer step of --batch-size
  rows, so ``--microbatches`` does not apply).

Index alignment with ``gpu_runs.train``: the log's ``step`` is 1-based as the trainer's
(record ``step = t + 1`` holds the loss of ``batch(t)``, ``lr = eta_t``, the stage optimizer's
own, ``lmo.registry.lr_at``, and, on eval steps, the validation loss on x_{t+1}); the pipeline logs every step. For gpipe / 1f1b /
2bw the batch of step t is split row-wise into M microbatches of batch_size / M rows,
each loss scaled by 1/M (the batch mean). 2bw: steps 0 and 1 both run on x_0
(x_1 = x_0 + d_{-1}, d_{-1} = 0: the pipeline fill); U(t), right before the first forward
of step t + 2, makes x_{t+2} = x_{t+1} + d_t; d_{T-1} is computed but not applied (it is
the trainer's pending delayed update, kept in the checkpoint; with mitigations see
below). pipedream: stage s runs
microbatch k on u_{max(0, k - tau_s)} (the trainer's mixed point, x_{<0} = x_0). A tied
head belongs to the first stage (its delay), as ``gpu_runs.model.stage_of_params`` says.

Global-norm clipping is exact: squared norms are all-reduced across stages (2bw launches
it asynchronously after a step's last backward, no bubble). For pipedream that all-reduce
after every microbatch is a barrier that reintroduces bubbles; ``--clip 0`` removes it.

Mitigations (2bw and ef only, as the trainer's ``TrainConfig(delay=Delay("2bw", ...))``): ``--sync-start
K`` / ``--sync-cooldown K`` run the first / last K steps synchronously as flushed 1F1B
steps and the rest as the 2BW stream (``gpu_runs.pipeline.schedules.stage_actions``); the stage
optimizer is the trainer's ``lmo.delay.delayed`` / ``lmo.error_feedback`` wrapper on the
stage's block (``gpu_runs.pipeline.delay``), so the first asynchronous step K applies nothing
(steps K and K+1 both run on x_K) and the cooldown switch T-K_c applies the pending
update with its own, x_{t+1} = y_t + d_t. ``--dc-asgd LAMBDA`` corrects each stage's
gradient elementwise, g + lambda g*g*(y_t - x_t), before the clipping norm (as the
trainer). They are refused for gpipe / 1f1b / pipedream, as the trainer refuses them outside 2bw.

``--diag-every N`` logs the trainer's theory diagnostics at its cadence, measured after the
run from per-stage snapshots (``gpu_runs.pipeline.diagnostics``; gpipe / 1f1b / 2bw of every
delay shape).

Checkpoints are per stage (``ckpt_stage{s}.pt``: ``gpu_runs.pipeline.checkpoint``;
``gpu_runs.pipeline.conversion`` converts them to and from the trainer's single ``ckpt.pt``
for sync and 2bw runs of every delay shape);
``--resume`` works for every schedule (pipedream's hold the tau_s = P-1-s stashed
versions each stage still forwards on).

Data parallel (``--dp D``, ``gpu_runs.pipeline.data_parallel``): WORLD_SIZE = D x P ranks in a
(dp, pp) device mesh, rank i P + s = stage s of replica i. Replica i takes rows
[i B/D, (i+1) B/D) of every global batch (then M microbatches of B / (D M) rows); in R(t)
each stage's gradient is averaged over its dp group (bucketed all-reduces, before the
clipping norm, DC-ASGD and U(t)), so every replica takes the same step and each schedule
keeps its meaning; the clipping all-reduce runs on the replica's pp group. ``--optimizer
muon`` shards its Newton-Schulz over the dp group (``gpu_runs.pipeline.sharded_muon``).
Replica 0 writes the log (train loss = dp mean) and one checkpoint per stage; ``--resume``
may change D (same global batch). A dead replica ends every rank as below.

Mixture-of-experts models (``--config tiny_moe`` / ``moe_2b``; ``gpu_runs.pipeline.moe``): each
stage adds its own MoE layers' ``aux_loss_coef * L_aux`` to every microbatch's backward, so a
step minimizes CE + coef * sum_l (mean over the M microbatches of layer l's per-microbatch
balance loss): the trainer's objective with ``aux_groups = M``, which config.json records
(the batch's L_aux is not additive over microbatches). The log's ``train_loss`` includes
the balance terms of every stage, ``routing`` holds every layer's load and L_aux (sent to the
last stage once per step), and ``val_loss`` is cross-entropy alone, as the trainer's. Not yet combined with ``--dp > 1`` (refused).

Failure handling: bad arguments are refused before any process group starts, in one line
printed by rank 0 (every rank runs the same checks; a rank prints its own refusal only where it
depends on that rank: its lock on ``--out``, the memory of its own device); any
exception, a peer's death (gloo reports a closed connection) or ``--timeout`` seconds
without progress (a watchdog thread) make the rank print ``[pipeline rank s/P] …`` and
exit non-zero at once; torchrun then stops the remaining ranks. Ctrl-C (SIGINT to every
rank) stops every rank at once (exit 130); rank 0 prints one line naming the newest set of
stage checkpoints intact on every stage and the launcher command that resumes from it
(``gpu_runs.interrupt``). Stage checkpoints carry sha256 sidecars (``gpu_runs.verified_files``).

Example: ``python -m gpu_runs.pipeline.torchrun --nproc-per-node 2 -m gpu_runs.pipeline --schedule 2bw -M 4
--config tiny --optimizer muon --steps 200 --out runs/pp_2bw``.

Run spec: the command line is parsed once into a :class:`gpu_runs.recipe.TrainConfig`, the
trainer's run spec, with its parallelism section (``TrainConfig.parallel``: schedule, M, D;
P is ``TrainConfig.stages``; ``args.run_spec``), and validated once (``TrainConfig.validate``);
every module downstream reads that spec (``args.Job.run``), the command line only for the
process knobs (``args.PROCESS``: timeout, fault, synthetic-ms, comm-log, quiet, the toy's
sizes, resume). Options mean what the trainer's mean: ``--eval-every 0`` evaluates after the
last step only; ``--ckpt-every`` None checkpoints at every evaluation, 0 never.

Layout (one concept per module): ``args`` (options, the run spec, the process knobs' checks), ``schedules`` (the
action lists of gpipe / 1f1b / 2bw / pipedream), ``stage`` (the stage engine that executes
them, built from ``comm`` (messages, the tied embedding / head), ``weight_versions`` (weight
stashing) and ``step_rule`` (cross-stage clip, DC-ASGD, update, apply)), ``delay`` (the trainer's delay wrappers per stage block), ``problem`` / ``llama`` /
``toy`` (what a stage trains), ``data_parallel`` / ``sharded_muon`` (``--dp``), ``worker`` (one process: ``run_stage``, ``main``),
``checkpoint`` (stage checkpoints, resume), ``conversion`` (to and from the trainer's ``ckpt.pt``;
``python -m gpu_runs.pipeline.convert``), ``diagnostics`` (``--diag-every``), ``launch``
(local multi-process runs for tests and benchmarks), ``bench`` (``python -m gpu_runs.pipeline.bench``;
``--setting dp``: step time and all-reduce share vs D).
"""
from gpu_runs.parallelism import SCHEDULES
from gpu_runs.pipeline.args import Job, build_parser, check_options, parse_job, run_spec
from gpu_runs.pipeline.problem import Problem
from gpu_runs.pipeline.worker import eval_steps_of, main, prepare, run_stage, validate_args

__all__ = ["build_parser", "run_spec", "parse_job", "Job", "check_options", "prepare", "validate_args", "main",
           "run_stage", "eval_steps_of", "Problem", "SCHEDULES"]
