"""The pipeline's view of the real model: ``gpu_runs.model.Llama``, ``gpu_runs.data`` and
the trainer's optimizer, built as ``gpu_runs.train.train`` builds them, so a pipeline
run and a trainer run with the same options share x_0, the batches, the validation set,
the lr schedule and the optimizer (applied per stage block).

The per-stage optimizer is the trainer's base optimizer, ``registry.build(name, params,
lr=WarmupCosine(peak, ...), momentum, weight_decay)``, without the trainer's
delay wrapper (``Delay.wrap``: the schedule runs the delay; 2bw wraps each stage's
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

from gpu_runs import memory_budget, recipe
from gpu_runs.data import Batcher, get_corpus, val_batches
from gpu_runs.model import Llama
from gpu_runs.parallelism import Parallelism
from gpu_runs.pipeline.problem import Problem
from gpu_runs.memory_budget import MemoryCost
from gpu_runs.recipe import TrainConfig


def run_config(run: TrainConfig) -> dict:
    """``config.json`` of a pipeline run (and its identity for ``--resume``): the run spec's
    fields (so ``gpu_runs.predict`` reads it like a trainer run) with the parallelism section
    flat, ``schedule``, ``microbatches``, ``dp``; the Newton-Schulz dtype as computed and the
    data's sha256 (``recipe.resolved`` / ``recipe.bind_data``)."""
    return spec_dict(recipe.bind_data(recipe.resolved(run), get_corpus(run.data)))


def spec_dict(run: TrainConfig) -> dict:
    """The run spec as one flat dict: its fields, the parallelism section's as top-level
    ``schedule``, ``microbatches``, ``dp`` (so ``--resume`` may change ``dp`` alone)."""
    d = run.as_dict()
    d.pop("parallel", None)
    return dict(d, **dataclasses.asdict(run.parallel))


def spec_of(d: dict) -> TrainConfig:
    """The inverse of :func:`spec_dict`: the run spec of a flat dict (the parallelism section's
    ``schedule``, ``microbatches``, ``dp`` folded back into ``TrainConfig.parallel``)::

        spec_of(spec_dict(run)) == run"""
    d = dict(d)
    par = {f.name: d.pop(f.name) for f in dataclasses.fields(Parallelism) if f.name in d}
    return TrainConfig(**d, parallel=Parallelism(**par))


def model_config(tc, corpus):
    """The trainer's model config: vocabulary from the data, max_seq_len >= seq_len; a stage
    forwards one microbatch at a time, so an MoE's balance loss is over the whole microbatch
    (aux_groups 1; the trainer's aux_groups = M spans the step)."""
    return dataclasses.replace(recipe.model_config(tc, corpus.vocab_size), aux_groups=1)


def base_optimizer(tc, params):
    """The trainer's optimizer without clipping and without the delay wrappers, and its
    schedule: ``gpu_runs.recipe.base_optimizer`` (the schedule on every parameter group)."""
    return recipe.base_optimizer(tc, params)


def memory_cost(run: TrainConfig, P: int) -> MemoryCost:
    """The memory cost of a P-stage pipeline run of ``run`` on one machine, before any rank
    allocates (``gpu_runs.memory_budget.run_cost``): the stages' parameters, gradients,
    optimizer states and delay queues add up to the trainer's, and every rank also builds
    the whole model once (:func:`llama_problem`): P extra model copies."""
    corpus = get_corpus(run.data)
    return memory_budget.run_cost(run, model_config(recipe.bind_data(run, corpus), corpus), model_copies=P)


def check_memory(run: TrainConfig, P: int, device: torch.device) -> MemoryCost:
    """:func:`memory_cost` against this machine (``memory_budget.check_fits``: DoesNotFit, one
    line naming the option); on CUDA each rank holds its own stage: 1/P of it on its device."""
    cost = memory_cost(run, P)
    share = cost if device.type != "cuda" else dataclasses.replace(
        cost, **{k: getattr(cost, k) // P for k in memory_budget.TERMS})
    memory_budget.check_fits(share, memory_budget.machine_available(device))
    return cost


def llama_problem(run: TrainConfig) -> Problem:
    """A :class:`gpu_runs.pipeline.Problem` for ``--model llama`` of the run spec ``run``:
    x_0, the batches and validation set and the stage optimizer (with the lr schedule value it
    evaluates itself, ``recipe.lr_schedule``) as the trainer's."""
    corpus = get_corpus(run.data)
    tc = recipe.bind_data(run, corpus)
    mcfg = model_config(tc, corpus)
    model = Llama(mcfg, seed=tc.seed)
    batcher = Batcher(corpus.train, tc.batch_size, tc.seq_len, tc.seed)
    val = val_batches(corpus.val, tc.eval_batches, tc.batch_size, tc.seq_len)
    cache = {}

    def layer_fn(layer, h):
        if h.device not in cache:
            cache[h.device] = (model.rope_cos.to(h.device), model.rope_sin.to(h.device))
        return layer(h, *cache[h.device])

    return Problem(model, batcher.batch, lambda params: base_optimizer(tc, params)[0],
                   tc.grad_clip or None, mcfg.d_model,
                   layer_fn=layer_fn, val_batch=lambda i: val[i])
