"""The run recipe shared by the trainer and the pipeline (docs/design.md §4): what a run is
(:class:`TrainConfig`), its peak lr and warmup-cosine schedule on every parameter group, the
optimizer of its delay, the loss and its gradient, and evaluation.

``TrainConfig`` is the one run spec: ``gpu_runs.train`` parses its command line into one
and runs it in one process; ``gpu_runs.pipeline`` parses its command line into one too
(``gpu_runs.pipeline.args.run_spec``), with the layout over processes in its parallelism
section (``TrainConfig.parallel``, :class:`gpu_runs.parallelism.Parallelism`), and builds its
stage optimizers from it. Options mean the same in both: ``eval_every`` 0 evaluates after
the last step only, ``ckpt_every`` None checkpoints at every evaluation and 0 never
(``gpu_runs.recorder``). One validation (:meth:`TrainConfig.validate`) serves both; its
messages name the field and its option. Checkpoint files are ``gpu_runs.checkpoint``'s.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace

import torch

from lmo import presets, registry
from lmo.clipping import clip_by_global_norm
from lmo.combine import chain, muon_labels
from lmo.ns_dtype import choose_ns_dtype, dtype_name
from lmo.pipedream import history_init, pipedream_delays
from lmo.presets import DECOUPLED_DECAY
from lmo.registry import OPTIMIZERS
from lmo.schedules import WarmupCosine
from lmo.variants import MODES, Delay  # MODES: re-exported (gpu_runs.MODES), the JSON's names

from gpu_runs.delay_fields import KEYS as DELAY_KEYS, UNSET, delay_of, flat_of
from gpu_runs.model import CONFIGS, Llama, get_config, stage_of_names, stage_of_params
from gpu_runs.parallelism import Parallelism, check_parallelism
from gpu_runs.sections import (SECTIONS, CheckpointSection, DataSection, DelaySection, EvaluationSection,
                               ModelSection, OptimizerSection, ParallelSection, ScheduleSection)

NS_DTYPES = ("auto", "float32", "bfloat16", "float64")


def resolve_ns_dtype(name: str, device: str) -> str:
    """The one resolution of ``--ns-dtype auto`` (trainer, pipeline, paper_figs via the trainer),
    from what the machine is, never a timing (``lmo.ns_dtype.choose_ns_dtype``)::

        "auto" on a CUDA device of capability >= 8.0 (native bf16 matmul) -> "bfloat16"
        "auto" on an older CUDA device, a CPU or anything else -> "float32";  other names -> name

    Resolved once per run, recorded in config.json and the checkpoints, reused by --resume."""
    if name != "auto":
        return name
    dev = torch.device(resolve_device(device))
    native = torch.cuda.get_device_capability(dev) >= (8, 0) if dev.type == "cuda" else None
    return dtype_name(choose_ns_dtype(dev, native))


def resolved(cfg: "TrainConfig") -> "TrainConfig":
    """``cfg`` with every run-time choice made concrete (today: ns_dtype), so that config.json,
    checkpoints and the resume check record what the run actually computed in."""
    return replace(cfg, ns_dtype=resolve_ns_dtype(cfg.ns_dtype, cfg.device))


def resumed(cfg: "TrainConfig", recorded: str | None) -> "TrainConfig":
    """The run spec of a ``--resume``: ns_dtype "auto" takes the run's ``recorded`` one (resolved
    only when there is none), whatever this machine would choose now; a concrete one stays."""
    if cfg.ns_dtype == "auto" and recorded not in (None, "auto"):
        return replace(cfg, ns_dtype=recorded)
    return resolved(cfg)


def bind_data(cfg: "TrainConfig", corpus) -> "TrainConfig":
    """``cfg`` with ``data_sha256`` = ``corpus.sha256`` (the tokens the run will consume).

    ValueError when ``cfg`` already names another hash: the data changed since the run was
    configured (another Python's stdlib, an edited file, a different shard set)."""
    if cfg.data_sha256 is None:
        return replace(cfg, data_sha256=corpus.sha256)
    if cfg.data_sha256 != corpus.sha256:
        raise ValueError(f"data: {cfg.data!r} holds tokens with sha256 {corpus.sha256}, but the run "
                         f"was configured for {cfg.data_sha256}: the data changed; point --data at "
                         f"the original data, or start a new run (data_sha256=None records the new hash)")
    return cfg


def resolve_device(name: str) -> str:
    """``auto`` -> cuda if available else cpu; any other name unchanged."""
    return ("cuda" if torch.cuda.is_available() else "cpu") if name == "auto" else name


def check_device(name: str) -> None:
    """ValueError naming ``--device`` when ``name`` is not ``auto`` or a device this package
    runs on (cpu, cuda, cuda:N, mps): the run spec's own check, true on every machine."""
    if name == "auto":
        return
    try:
        dev = torch.device(name)
    except RuntimeError:
        raise ValueError(f"TrainConfig.device (--device): unknown device {name!r}; "
                         f"use auto, cpu, cuda or cuda:N") from None
    if dev.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"TrainConfig.device (--device) {name!r}: only cpu, cuda and mps are supported")


def check_device_here(name: str) -> None:
    """ValueError naming ``--device`` when this torch build and machine cannot run on ``name``
    (CUDA without CUDA, cuda:N beyond the machine's devices, MPS without MPS): checked where a
    run starts, not in the spec (a GPU profile is a valid spec on a CPU machine)."""
    if name == "auto":
        return
    dev = torch.device(name)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"TrainConfig.device (--device) {name!r}: no CUDA device here "
                         f"(torch.cuda.is_available() is False); use --device cpu or auto")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ValueError(f"TrainConfig.device (--device) {name!r}: this machine has "
                         f"{torch.cuda.device_count()} CUDA device(s)")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"TrainConfig.device (--device) {name!r}: MPS is not available here; use --device cpu or auto")


#: fields that are no command-line option of their own (a dict, a section); the delay's options
#: are its flat fields' (gpu_runs.delay_fields.DelayFields)
NOT_OPTIONS = ("opt_kwargs", "parallel", "delay")


def _opt(name: str) -> str:
    """A field as the messages name it: ``TrainConfig.name (--name)`` (the option of both CLIs)."""
    return f"TrainConfig.{name} (--{name.replace('_', '-')})"


@dataclass(kw_only=True)
class TrainConfig(ParallelSection, CheckpointSection, EvaluationSection, DelaySection, ScheduleSection,
                  OptimizerSection, DataSection, ModelSection):
    """Everything that defines a run (its JSON, :meth:`as_dict`, is the run's identity): the
    sections of ``gpu_runs.sections`` put together (model, data, optimizer, schedule, delay,
    evaluation, checkpoint, parallel; each field documented there), read as ``cfg.lr``, or a
    whole section as ``cfg.section("optimizer")``.

    ``delay``: the run's delay (:class:`lmo.variants.Delay`), stored as one value: built once
    where the spec is parsed or read back. Its JSON spells it in flat keys
    (:class:`gpu_runs.delay_fields.DelayFields`: ``mode``, ``ef``, ``sync_start``, ...), which
    the constructor still takes, so ``TrainConfig(**config_json)`` reads a run back::

        TrainConfig(mode="2bw", ef=True)          delay = Delay("ef")
        TrainConfig(delay=Delay("2bw", 3))        the same value, given directly
        TrainConfig(delay=d, sync_start=5)        d's flat fields with sync_start = 5

    (flat keys update the given or default delay's own flat fields, so ``dataclasses.replace(cfg,
    mode="2bw")`` works as before; a pipedream delay's tau is ``stages`` - 1).

    ``parallel``: the layout over processes (:class:`gpu_runs.parallelism.Parallelism`); the
    default is the trainer's one process and is left out of :meth:`as_dict`."""

    def __post_init__(self, *flat_values):
        if isinstance(self.parallel, dict):   # read back from JSON
            self.parallel = Parallelism(**self.parallel)
        flat = {k: v for k, v in zip(DELAY_KEYS, flat_values, strict=True) if v is not UNSET}
        if flat:   # built once, here: the flat keys over the given (or the default) delay
            self.delay = delay_of(flat, self.stages, self.delay)
        if not isinstance(self.delay, Delay):
            raise TypeError(f"TrainConfig.delay must be an lmo.variants.Delay, got {self.delay!r} "
                            f"(a run's JSON spells it in flat keys: {', '.join(DELAY_KEYS)})")
        if self.delay.stale_point or self.delay.profile == "pipedream":
            if self.delay.tau != self.stages - 1:
                raise ValueError(f"TrainConfig.delay: a pipedream delay's tau is stages - 1 (--stages "
                                 f"{self.stages}), got tau {self.delay.tau}")
        # the decay convention is part of the run's identity: record the keyword arguments
        # that make this optimizer's weight_decay decoupled (lmo.presets.DECOUPLED_DECAY)
        self.opt_kwargs = {**DECOUPLED_DECAY.get(self.optimizer, {}), **(self.opt_kwargs or {})}
        # the corpus is part of the identity too; the built-in one's hash is known without loading it
        if self.data == "stdlib" and self.data_sha256 is None:
            # imported here: ``import gpu_runs`` must not import the command
            # ``python -m gpu_runs.builtin_corpus`` (runpy would run a second copy of it)
            from gpu_runs.builtin_corpus import STDLIB_SHA256
            self.data_sha256 = STDLIB_SHA256

    def as_dict(self) -> dict:
        """``dataclasses.asdict(self)`` with the delay flattened into its keys
        (``gpu_runs.delay_fields.flat_of``: mode, ef, the mitigations; tau, corrector,
        delay_profile and delayed_groups only where they are not off) and the ``parallel``
        section left out while it is the default (the trainer's one process): a trainer run's
        JSON (config.json, the checkpoint's configuration, the resume check, ``paper_figs``'
        cache key) is what it was before the delay was one value and the section existed."""
        d = {}
        for k, v in asdict(self).items():
            if k == "delay":
                flat = flat_of(self.delay)
                d["mode"] = flat.pop("mode")
                d["stages"] = self.stages
                d.update(flat)
            elif k != "stages":
                d[k] = v
        if self.parallel == Parallelism():
            del d["parallel"]
        return d

    def section(self, name: str):
        """The section ``name`` of :data:`gpu_runs.sections.SECTIONS` as its own value, e.g.
        ``cfg.section("schedule") == ScheduleSection(steps=..., warmup_frac=..., final_frac=...)``."""
        cls = SECTIONS[name]
        return cls(**{f.name: getattr(self, f.name) for f in fields(cls)})

    def validate(self, *, names: bool = True, num_layers: int | None = None) -> None:
        """ValueError naming the field and its option for any value outside its domain: the
        one check of a run, for the trainer and the pipeline alike.

        ``names``: also check the optimizer and model names against the registries (False
        for the pipeline's toy model, which has its own); ``num_layers``: the model's layer
        count, which a pipeline layout's P may not exceed (default: the model config's)."""
        if num_layers is None and names and self.config in CONFIGS:
            num_layers = CONFIGS[self.config].n_layers
        delay = self.delay     # its own rules were checked where it was built (lmo.variants.Delay)
        check_parallelism(self.parallel, delay=delay, stages=self.stages, steps=self.steps,
                          batch_size=self.batch_size, num_layers=num_layers)
        for k in ("steps", "batch_size", "seq_len", "eval_batches"):
            if getattr(self, k) < 1:
                raise ValueError(f"{_opt(k)} must be >= 1, got {getattr(self, k)}")
        for k in ("eval_every", "diag_every", "log_every"):
            if getattr(self, k) < 0:
                raise ValueError(f"{_opt(k)} must be >= 0, got {getattr(self, k)}")
        if not isinstance(self.aux_groups, int) or self.aux_groups < 1 or self.batch_size % self.aux_groups:
            raise ValueError(f"TrainConfig.aux_groups must be a positive int dividing batch_size="
                             f"{self.batch_size}, got {self.aux_groups!r}")
        if self.ckpt_every is not None and self.ckpt_every < 0:
            raise ValueError(f"{_opt('ckpt_every')} must be >= 0 (0: never; None: at every evaluation), "
                             f"got {self.ckpt_every}")
        if not 0 <= self.seed < 2 ** 32:
            raise ValueError(f"{_opt('seed')} must lie in [0, 2**32), got {self.seed}")
        if delay.one_step and (delay.sync_start or delay.sync_cooldown) \
                and delay.sync_start + delay.sync_cooldown >= self.steps:
            raise ValueError(f"{_opt('sync_start')} + {_opt('sync_cooldown')} = "
                             f"{delay.sync_start + delay.sync_cooldown} leaves none of the {self.steps} "
                             f"steps delayed: that run is synchronous (--delay sync; pipeline: --schedule 1f1b)")
        if delay.tau >= self.steps:   # the first tau steps apply nothing: no update would land
            raise ValueError(f"{_opt('tau')}: tau {delay.tau} >= {_opt('steps')} {self.steps}: the first "
                             f"tau steps apply nothing, so no computed update would ever be applied; "
                             f"lower --tau or raise --steps")
        check_device(self.device)
        self.validate_recipe(names=names)
        if self.resume and not self.out:
            raise ValueError("TrainConfig.resume needs out= (the run directory)")

    def validate_recipe(self, names: bool = True) -> None:
        """Names (``names``) and numbers of the recipe: optimizer, model config, lr, momentum,
        decay, schedule."""
        if names and self.optimizer not in list(OPTIMIZERS):
            raise ValueError(f"{_opt('optimizer')}: unknown optimizer {self.optimizer!r}; "
                             f"choose from {', '.join(sorted(OPTIMIZERS))}")
        if names and self.config not in CONFIGS:
            raise ValueError(f"{_opt('config')}: unknown model config {self.config!r}; "
                             f"choose from {', '.join(CONFIGS)}")
        if self.lr is not None and not (math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"{_opt('lr')} must be a finite number > 0 (or None: the preset), got {self.lr}")
        if self.momentum is not None and not 0 <= self.momentum < 1:
            raise ValueError(f"{_opt('momentum')} must lie in [0, 1), got {self.momentum}")
        for k in ("weight_decay", "grad_clip"):
            v = getattr(self, k)
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{_opt(k)} must be a finite number >= 0, got {v}")
        if self.ns_dtype not in NS_DTYPES:
            raise ValueError(f"{_opt('ns_dtype')} must be one of {NS_DTYPES}, got {self.ns_dtype!r}")
        if not 0 <= self.warmup_frac < 1:
            raise ValueError(f"{_opt('warmup_frac')} must lie in [0, 1), got {self.warmup_frac}")
        if not 0 <= self.final_frac <= 1:
            raise ValueError(f"{_opt('final_frac')} must lie in [0, 1], got {self.final_frac}")


def peak_lr(cfg: TrainConfig) -> float:
    """The run's peak lr: ``lmo.presets.peak_lr(optimizer, lr)`` (``--lr``, else the preset), the
    one resolution of the preset."""
    return presets.peak_lr(cfg.optimizer, cfg.lr)


def lr_schedule(cfg: TrainConfig) -> WarmupCosine:
    """The run's lr as one value, built once: ``lmo.schedules.WarmupCosine(peak_lr(cfg), steps,
    warmup_frac, final_frac)``; the optimizer receives it and evaluates it at its own step counter."""
    return WarmupCosine(peak_lr(cfg), cfg.steps, cfg.warmup_frac, cfg.final_frac)


def base_optimizer(cfg: TrainConfig, params: dict):
    """The registry optimizer of the run with the schedule on *every* parameter group.

    ``registry.build(name, params, lr=lr_schedule(cfg), ...)``: the named optimizer receives the
    schedule value as its lr; for the matrix optimizers (muon, normuon, adamuon) the AdamW group
    of embeddings, head, norms and vectors follows the same warmup-cosine shape from its own
    peak (``WarmupCosine.with_peak``, inside lmo). Returns (opt, lr) with ``lr`` the value the
    named optimizer holds (``lmo.registry.lr_of(opt)``: the logged lr is the optimizer's)."""
    kw = dict(cfg.opt_kwargs)
    if cfg.optimizer in registry.NS_OPTIMIZERS and "ns_dtype" not in kw:
        kw["ns_dtype"] = resolve_ns_dtype(cfg.ns_dtype, cfg.device)   # a name: lmo takes it
    opt = registry.build(cfg.optimizer, params, lr=lr_schedule(cfg), momentum=cfg.momentum,
                         weight_decay=cfg.weight_decay, **kw)
    return opt, registry.lr_of(opt)


def build_optimizer(cfg: TrainConfig, params: dict, stage_of: dict | None = None):
    """clip -> registry optimizer with the warmup-cosine schedule, wrapped for the run's delay
    (``TrainConfig.delay.wrap``, with the run's mitigations, corrector and per-block delays
    :func:`delay_taus`).

    Returns (opt, inner, lr) where ``inner`` is the synchronous optimizer and ``lr`` the schedule
    value the named optimizer holds (:func:`base_optimizer`)."""
    base, lr = base_optimizer(cfg, params)
    inner = chain(clip_by_global_norm(cfg.grad_clip), base) if cfg.grad_clip else base
    # sync and pipedream stay unwrapped (pipedream's staleness is the loop's history)
    opt = cfg.delay.wrap(inner, total_steps=cfg.steps, taus=delay_taus(cfg, params, stage_of))
    return opt, inner, lr


def delay_taus(cfg: TrainConfig, params: dict, stage_of: dict | None = None):
    """The delay of each block of ``params`` (``lmo.variants.Delay.taus``): the stages of the
    contiguous layer split (``model.stage_of_names``; ``stage_of`` overrides) and the Muon
    family's labels (``lmo.combine.muon_labels``: "matrix" / "other")."""
    delay = cfg.delay
    if stage_of is None and delay.profile == "pipedream":
        stage_of = stage_of_names(list(params), get_config(cfg.config).n_layers, cfg.stages)
    return delay.taus(stage_of, muon_labels(params))


def make_history(cfg: TrainConfig, model: Llama, params: dict):
    """PipeDream stale-point model: per-parameter delays tau_k from the layer split, and the
    empty history (``lmo.pipedream.StaleHistory``, a pure state: the loop threads it through
    ``history_push`` / ``mixed_point`` as it threads the optimizer state). Returns (hist, delays)."""
    delays = pipedream_delays(stage_of_params(model, cfg.stages), cfg.stages)
    return history_init(delays), delays


def loss_fn(model: Llama, compile: bool = False, aux: bool = True):
    """f(params, x, y) = model.loss(x, y) at ``params`` (torch.func.functional_call by the
    model's own parameter names; a tied head follows embed). ``compile``: the same function
    through torch.compile (Dynamo traces the functional call: same keys, same graph)."""
    view = _LossView(model, aux)

    def f(params, x, y):
        return torch.func.functional_call(view, {f"m.{k}": v for k, v in params.items()}, (x, y))

    return torch.compile(f, backend=COMPILE_BACKEND) if compile else f


#: torch.compile backend of ``--compile`` (tests use "aot_eager": no C++ toolchain needed)
COMPILE_BACKEND = "inductor"


def loss_and_grads(model: Llama, point: dict, x, y, amp: bool, fn=None):
    """f(point; batch) and its gradient; ``fn``: a :func:`loss_fn` (default: eager on ``model``)."""
    fn = fn or loss_fn(model)
    leaves = {k: v.detach().requires_grad_(True) for k, v in point.items()}
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
        loss = fn(leaves, x, y)
    grads = torch.autograd.grad(loss, list(leaves.values()))
    return loss.detach(), dict(zip(leaves, grads))


class _LossView(torch.nn.Module):
    """forward = model.loss, so functional_call can call it."""

    def __init__(self, m, aux: bool = True):
        super().__init__()
        self.m, self.aux = m, aux

    def forward(self, x, y):
        return self.m.loss(x, y, aux=self.aux)


@torch.no_grad()
def evaluate(model: Llama, params: dict, batches, amp: bool, fn=None) -> float:
    """Mean validation cross-entropy over ``batches`` (an MoE model's balance loss left out)."""
    fn = fn or loss_fn(model, aux=False)
    tot = 0.0
    for x, y in batches:
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            tot += float(fn(params, x, y))
    return tot / len(batches)


def model_config(cfg: TrainConfig, vocab_size: int):
    """The model config of a run on data with ``vocab_size`` ids: byte data keeps 256, larger
    vocabularies round up to a multiple of 64; max_seq_len >= seq_len; an MoE's ``aux_groups``."""
    vocab = int(math.ceil(vocab_size / 64) * 64) if vocab_size > 256 else vocab_size
    return get_config(cfg.config, vocab_size=vocab, max_seq_len=max(cfg.seq_len, get_config(cfg.config).max_seq_len),
                      aux_groups=cfg.aux_groups)
