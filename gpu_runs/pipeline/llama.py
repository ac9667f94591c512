"""The pipeline's view of the real model: ``gpu_runs.model.Llama``, ``gpu_runs.data`` and
the trainer's optimizer, built as ``gpu_runs.train.train`` builds them, so a pipeline
run and a trainer run with the same options share x_0, the batches, the validation set,
the lr schedule and the optimizer (applied per stage block).

The per-stage optimizer is the trainer's base optimizer, ``registry.build(name, params,
lr=peak, schedule=lambda peak: warmup_cosine(peak, ...), momentum, weight_decay)``, without the trainer's
variant wrapper (``lmo.variants.wrap``: the schedule *is* the delay; 2bw wraps each stage's
block in ``gpu_runs.pipeline.delay.DelayRule``) and without its
``clip_by_global_norm`` (the engine clips with the all-reduced norm of every stage, the
same formula c = min(1, max_norm / (||g|| + 1e-6))).

An MoE model (``--config tiny_moe``): each stage adds its own layers' ``aux_loss_coef *
L_aux`` per microbatch, so the step's objective is the mean over the M microbatches of the
per-microbatch CE + aux; the equivalent trainer run has ``aux_groups = M``
(:func:`train_config`; ``gpu_runs.pipeline.moe``).
"""
from __future__ import annotations

import dataclasses

import torch

from gpu_runs import recipe
from gpu_runs.data import Batcher, get_corpus, val_batches
from gpu_runs.model import CONFIGS, Llama, get_config
from gpu_runs.pipeline.problem import Problem
from gpu_runs.pipeline.schedules import MODE_OF_SCHEDULE
from gpu_runs.recipe import TrainConfig


def train_config(args, num_stages: int | None = None):
    """The :class:`gpu_runs.recipe.TrainConfig` a pipeline run is equivalent to."""
    return TrainConfig(
        config=args.config, optimizer=args.optimizer, lr=args.lr, momentum=args.momentum,
        weight_decay=0.1 if args.weight_decay is None else args.weight_decay,
        grad_clip=1.0 if args.clip is None else args.clip,
        warmup_frac=args.warmup_frac, final_frac=args.final_frac,
        mode=MODE_OF_SCHEDULE[args.schedule], stages=num_stages or 2, ef=args.ef, steps=args.steps,
        batch_size=args.batch_size, aux_groups=aux_groups(args), seq_len=args.seq_len, eval_every=args.eval_every,
        eval_batches=args.eval_batches, seed=args.seed, data=args.data or "stdlib",
        device=args.device, ns_dtype=getattr(args, "ns_dtype", "auto"))


def aux_groups(args) -> int:
    """The trainer's ``aux_groups`` of this run: M for an MoE model under gpipe / 1f1b / 2bw (each
    microbatch has its own balance loss), 1 for pipedream (a step is one microbatch) and dense models."""
    if (args.model != "llama" or args.config not in CONFIGS or not CONFIGS[args.config].n_experts
            or args.schedule == "pipedream"):
        return 1
    return args.microbatches


def run_config(args, num_stages: int) -> dict:
    """``config.json`` of a pipeline run: the equivalent trainer's TrainConfig fields (so
    ``gpu_runs.predict`` reads it like a trainer run) plus the schedule, P and M."""
    tc = recipe.resolved(train_config(args, num_stages))   # the Newton-Schulz dtype as computed
    tc = recipe.bind_data(tc, get_corpus(tc.data))          # and the data's sha256
    tc.sync_start, tc.sync_cooldown, tc.dc_asgd = args.sync_start, args.sync_cooldown, args.dc_asgd
    tc.diag_every, tc.diag_micro, tc.out = args.diag_every, args.diag_micro, args.out
    return dict(dataclasses.asdict(tc), schedule=args.schedule, microbatches=args.microbatches)


def model_config(tc, corpus):
    """The trainer's model config: vocabulary from the data, max_seq_len >= seq_len; a stage
    forwards one microbatch at a time, so an MoE's balance loss is over the whole microbatch
    (aux_groups 1; the trainer's aux_groups = M spans the step)."""
    return dataclasses.replace(recipe.model_config(tc, corpus.vocab_size), aux_groups=1)


def base_optimizer(tc, params):
    """The trainer's optimizer without clipping and without the delay wrappers, and its
    schedule: ``gpu_runs.recipe.base_optimizer`` (the schedule on every parameter group)."""
    return recipe.base_optimizer(tc, params)


def num_layers(args) -> int:
    return get_config(args.config).n_layers


def llama_problem(args):
    """A :class:`gpu_runs.pipeline.Problem` for ``--model llama``."""
    tc = train_config(args)
    corpus = get_corpus(tc.data)
    tc = recipe.bind_data(tc, corpus)
    mcfg = model_config(tc, corpus)
    model = Llama(mcfg, seed=tc.seed)
    batcher = Batcher(corpus.train, tc.batch_size, tc.seq_len, tc.seed)
    val = val_batches(corpus.val, tc.eval_batches, tc.batch_size, tc.seq_len)
    _, sched = base_optimizer(tc, {"w": torch.zeros(2, 2)})
    cache = {}

    def layer_fn(layer, h):
        if h.device not in cache:
            cache[h.device] = (model.rope_cos.to(h.device), model.rope_sin.to(h.device))
        return layer(h, *cache[h.device])

    return Problem(model, batcher.batch, lambda params: base_optimizer(tc, params)[0],
                   lambda t: float(sched(t)), tc.grad_clip or None, mcfg.d_model,
                   layer_fn=layer_fn, val_batch=lambda i: val[i])
