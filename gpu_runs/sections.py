"""The run spec's sections: what a run is, field by field, grouped by what each part decides,
each field's help text written right below it (``gpu_runs.field_docs``), in the spirit of
torchtitan's job-config sections.

``gpu_runs.recipe.TrainConfig`` is these sections put together (a dataclass that inherits
every section's fields), so a field is still read as ``cfg.lr`` and a run's JSON
(``TrainConfig.as_dict``) keeps every key it had; :meth:`TrainConfig.section` gives one
section as its own value. Both command lines (``python -m gpu_runs.train`` and the
pipeline's, ``gpu_runs.cli.add_config_options``) are generated from these fields: their
names, defaults, types and docstrings.

==========  ======================================================================
model       which decoder, where it runs, how its loss is computed
data        the tokens, the batch and the order they are drawn in
optimizer   the synchronous optimizer: its name, hyperparameters and clip
schedule    the horizon and the lr's warmup-cosine shape
delay       the run's delay (``lmo.variants.Delay``, stored as one value) and P
evaluation  what is measured besides the training loss, and how often
checkpoint  where the run is written and how it resumes
parallel    the layout over processes (``gpu_runs.parallelism.Parallelism``)
==========  ======================================================================

Each section is declared ``kw_only``; ``TrainConfig`` lists them in reverse (a dataclass
collects its bases' fields from the last base to the first), so its fields, and the run's
JSON, run model, data, optimizer, schedule, delay, evaluation, checkpoint.
"""
from __future__ import annotations

from dataclasses import InitVar, dataclass, field

from lmo.variants import Delay

from gpu_runs.delay_fields import UNSET, DelayFields
from gpu_runs.parallelism import Parallelism


@dataclass(kw_only=True)
class ModelSection:
    """Which decoder, where it runs, how its loss is computed."""

    config: str = "tiny"
    """model config: tiny, small, 135m, 360m, tiny_moe, moe_2b (gpu_runs.model.CONFIGS)"""
    aux_groups: int = 1
    """MoE: each layer's balance loss is the mean over this many equal groups of the batch's
    sequences (a pipeline with M microbatches computes M; 1: the whole batch)"""
    device: str = "auto"
    """cpu, cuda or auto (cuda if available)"""
    compile: bool = False
    """torch.compile the loss (Dynamo traces the functional call)"""


@dataclass(kw_only=True)
class DataSection:
    """The tokens, the batch and the order they are drawn in."""

    data: str = "stdlib"
    """'stdlib', a text dir, a token shard or shard dir (gpu_runs.data)"""
    data_sha256: str | None = None
    """sha256 of the train/val tokens (gpu_runs.data.tokens_sha256), part of the run's identity:
    None computes and records it at load; given, other data is refused ('stdlib': the frozen
    corpus's, filled in)"""
    batch_size: int = 32
    """sequences per step"""
    seq_len: int = 64
    """tokens per sequence"""
    seed: int = 0
    """seed of x_0 and of the batch order"""


@dataclass(kw_only=True)
class OptimizerSection:
    """The synchronous optimizer: its name, hyperparameters and clip."""

    optimizer: str = "adamw"
    """any name of lmo.registry.OPTIMIZERS"""
    lr: float | None = None
    """peak lr (None: lmo.presets.DEFAULT_LR[optimizer])"""
    momentum: float | None = None
    """primary momentum beta (None: the optimizer's preset)"""
    weight_decay: float = 0.1
    """decoupled weight decay lambda"""
    grad_clip: float = 1.0
    """global-norm clipping threshold (0: off)"""
    ns_dtype: str = "auto"
    """Newton-Schulz dtype of muon / normuon / adamuon / scion: auto (bfloat16 on a CUDA GPU with
    native bf16, else float32; resolved once, recorded, reused by --resume), float32, bfloat16,
    float64"""
    opt_kwargs: dict = field(default_factory=dict)
    """extra keyword arguments of the optimizer (Python API only; lmo.presets.DECOUPLED_DECAY's are
    filled in, so the decay is decoupled for every optimizer)"""


@dataclass(kw_only=True)
class ScheduleSection:
    """The horizon and the lr's warmup-cosine shape (``gpu_runs.recipe.lr_schedule``)."""

    steps: int = 200
    """optimizer steps T (the schedule's horizon)"""
    warmup_frac: float = 0.1
    """linear lr warmup, fraction of the steps"""
    final_frac: float = 0.1
    """cosine floor as a fraction of the peak lr"""


@dataclass(kw_only=True)
class DelaySection:
    """The run's delay, stored as one value, and the number of stages P (the pipeline's stages;
    a pipedream delay's tau is P - 1). The delay's flat keys (``gpu_runs.delay_fields.KEYS``)
    are constructor arguments only: a run's JSON read back, or a change of one of them."""

    delay: Delay = field(default_factory=Delay)
    """the run's delay (lmo.variants.Delay); its options are its flat fields (DelayFields)"""
    stages: int = 2
    """the number of pipeline stages P (pipedream: its tau is P - 1; the pipeline's stages)"""
    mode: InitVar[str] = UNSET
    ef: InitVar[bool] = UNSET
    sync_start: InitVar[int] = UNSET
    sync_cooldown: InitVar[int] = UNSET
    dc_asgd: InitVar[float] = UNSET
    tau: InitVar[int | None] = UNSET
    corrector: InitVar[str] = UNSET
    delay_profile: InitVar[str] = UNSET
    delayed_groups: InitVar[str] = UNSET


@dataclass(kw_only=True)
class EvaluationSection:
    """What is measured besides the training loss, and how often (never how it trains)."""

    eval_every: int = 50
    """validation loss every N steps and at the end (0: at the end only)"""
    eval_batches: int = 4
    """validation batches per evaluation"""
    log_every: int = 10
    """a log.jsonl record every N steps (evaluations always)"""
    diag_every: int = 0
    """theory diagnostics every N steps (0: off)"""
    diag_micro: int = 4
    """independent microbatches for sigma / momentum error"""


@dataclass(kw_only=True)
class CheckpointSection:
    """Where the run is written and how it resumes."""

    out: str | None = None
    """run directory (config.json, log.jsonl, ckpt.pt, result.json)"""
    ckpt_every: int | None = None
    """checkpoint every N steps (0: never; None: at every evaluation)"""
    resume: bool = False
    """continue the run in OUT from its newest complete checkpoint (identical trajectory; refused
    if the saved run differs; a finished run is left as it is)"""


@dataclass(kw_only=True)
class ParallelSection:
    """The layout over processes; the default, the trainer's one process, is left out of the
    run's JSON."""

    parallel: Parallelism = field(default_factory=Parallelism)
    """the layout over processes (gpu_runs.parallelism.Parallelism; the pipeline's --schedule,
    --microbatches, --dp; default: the trainer's one process)"""


#: the sections by name, in the order of a run's JSON
SECTIONS = {"model": ModelSection, "data": DataSection, "optimizer": OptimizerSection,
            "schedule": ScheduleSection, "delay": DelaySection, "evaluation": EvaluationSection,
            "checkpoint": CheckpointSection, "parallel": ParallelSection}
#: the section classes, plus the delay's flat spelling (its command-line options)
DOCUMENTED = (*SECTIONS.values(), DelayFields)
