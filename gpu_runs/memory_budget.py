"""A run's memory cost, stated before it allocates, and the refusal of one that cannot fit.

The cost of a run (bytes), each term from the shapes alone (nothing is allocated: the
optimizer is built on ``meta`` tensors, :func:`run_cost`)::

    params        sum_k |x^k| * bytes(x^k)
    grads         the same (one gradient per parameter)
    opt_state     the optimizer's own state (momentum, second moments, ...), measured on meta
    delay_queue   the pending updates of the delay wrapper: tau copies of every delayed block
                  (lmo.delay.DelayState.pending), plus pipedream's stale iterates (tau_k copies)
    activations   an estimate of what backward keeps for one batch (:func:`activation_bytes`)
    copies        extra full copies of the parameters (a pipeline rank builds the whole model)

    total = params + grads + opt_state + delay_queue + activations + copies

A run is refused (:class:`DoesNotFit`, one line naming the option to change) when
``total > available`` (:func:`check_fits`: a pure function of the sizes and the available
memory, read by :func:`machine_available` from ``/proc/meminfo``'s MemAvailable, the address
space limit ``ulimit -v`` less what the process maps already, and on CUDA the device's free
memory). The option named is the one of the largest term: ``--tau`` for the delay queue,
``--batch-size`` / ``--seq-len`` for the activations, ``--config`` otherwise.
"""
from __future__ import annotations

import dataclasses
import os
import resource
from dataclasses import dataclass

import torch

from lmo.variants import Delay

from gpu_runs.model import Llama
from gpu_runs.recipe import build_optimizer, delay_taus, make_history

#: the terms of a cost, in the order they are stated
TERMS = ("params", "grads", "opt_state", "delay_queue", "activations", "copies")


class DoesNotFit(ValueError):
    """A run whose stated memory cost exceeds what the machine has (the message names the option)."""


@dataclass(frozen=True)
class MemoryCost:
    """Bytes of each term (module docstring); ``tau``: the delay's largest tau, for the message."""

    params: int
    grads: int
    opt_state: int
    delay_queue: int
    activations: int
    copies: int = 0
    tau: int = 0

    @property
    def total(self) -> int:
        """params + grads + opt_state + delay_queue + activations + copies."""
        return sum(getattr(self, k) for k in TERMS)

    def line(self) -> str:
        """The statement of the cost, one line: each nonzero term and the total."""
        names = dict(params="params", grads="grads", opt_state="optimizer state",
                     delay_queue=f"delay queue (tau {self.tau})", activations="activations (estimate)",
                     copies="model copies")
        parts = [f"{names[k]} {human(getattr(self, k))}" for k in TERMS if getattr(self, k)]
        return f"memory: {' + '.join(parts)} = {human(self.total)}"


def human(n: float) -> str:
    """Bytes in the largest binary unit that keeps the number >= 1 (``1.5 GiB``)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def option_to_lower(cost: MemoryCost) -> str:
    """The option of the largest term: delay queue -> ``--tau``; activations ->
    ``--batch-size / --seq-len``; params, grads, optimizer state, copies -> ``--config``."""
    big = max(TERMS, key=lambda k: getattr(cost, k))
    return {"delay_queue": "--tau", "activations": "--batch-size / --seq-len"}.get(big, "--config")


def check_fits(cost: MemoryCost, available: int | None) -> None:
    """:class:`DoesNotFit` when ``cost.total > available`` (None: unknown, nothing refused);
    the message states the cost, what is available, and the option to lower."""
    if available is None or cost.total <= available:
        return
    raise DoesNotFit(f"{cost.line()}, but only {human(available)} is available: lower "
                     f"{option_to_lower(cost)} (nothing was allocated)")


def activation_bytes(mcfg, batch: int, seq: int, bytes_per: int = 4) -> int:
    """An estimate of what backward keeps for one batch of B sequences of T tokens::

        per layer  B T (12 d + 3 w) + 2 B h T^2      (w: the MLP width, top_k experts' for MoE)
        head       3 B T V                           (logits, their fp32 copy, their gradient)

    times ``bytes_per``; an estimate (the order of magnitude that matters for a refusal)."""
    B, T, d = batch, seq, mcfg.d_model
    w = mcfg.d_mlp if not mcfg.n_experts else (mcfg.top_k + mcfg.n_shared_experts) * (mcfg.d_expert or mcfg.d_mlp)
    per_layer = B * T * (12 * d + 3 * w) + 2 * B * mcfg.n_heads * T * T
    return bytes_per * (mcfg.n_layers * per_layer + 3 * B * T * mcfg.vocab_size)


def tree_bytes(tree, *, under: str = "", name: str = "") -> int:
    """Bytes of the tensors of a state tree (mappings, tuples, named tuples); ``under``: only
    the leaves below a field or key of that name (``"pending"``: the delay queue)."""
    if isinstance(tree, torch.Tensor):
        return tree.numel() * tree.element_size() if not under or under in name.split("/") else 0
    if isinstance(tree, dict):
        items = tree.items()
    elif isinstance(tree, (tuple, list)):
        items = zip(getattr(tree, "_fields", None) or range(len(tree)), tree)
    else:
        items = vars(tree).items() if hasattr(tree, "__dict__") else ()
    return sum(tree_bytes(v, under=under, name=f"{name}/{k}") for k, v in items)


def parse_meminfo(text: str) -> int | None:
    """MemAvailable of a ``/proc/meminfo`` text, in bytes (None when absent)."""
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return None


def available_bytes(mem_available: int | None, address_limit: int | None, mapped: int = 0,
                    device_free: int | None = None) -> int | None:
    """min(MemAvailable, address-space limit - mapped, device free) over those known; None when
    none is (then nothing is refused). On a GPU the run's tensors live in the device's memory."""
    known = [v for v in (mem_available, None if address_limit is None else address_limit - mapped,
                         device_free) if v is not None]
    return max(0, min(known)) if known else None


def machine_available(device: torch.device) -> int | None:
    """:func:`available_bytes` of this machine now: ``/proc/meminfo`` (else ``os.sysconf``'s
    available pages), ``ulimit -v`` less this process's VmSize, and the CUDA device's free memory."""
    try:
        with open("/proc/meminfo") as f:
            mem = parse_meminfo(f.read())
    except OSError:
        try:
            mem = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            mem = None
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    limit = None if limit == resource.RLIM_INFINITY else limit
    mapped = _vm_size() if limit is not None else 0
    free = torch.cuda.mem_get_info(device)[0] if device.type == "cuda" else None
    return available_bytes(mem, limit, mapped, free)


def _vm_size() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


#: up to this tau the delay wrapper itself is built on meta and measured; beyond it (its
#: queue alone is tau tensors per block: slow to build even on meta) the queue is counted
QUEUE_MEASURED_UP_TO = 16


def queue_bytes(taus, params: dict) -> int:
    """The delay queue of ``lmo.delay.delayed``: sum_k tau_k * bytes(x^k) (``taus`` an int,
    every block, or {name: tau_k})."""
    return sum((taus if isinstance(taus, int) else taus[k]) * v.numel() * v.element_size()
               for k, v in params.items())


def run_cost(cfg, mcfg, *, model_copies: int = 0) -> MemoryCost:
    """The cost of the run ``cfg`` (a ``gpu_runs.recipe.TrainConfig``) on the model ``mcfg``:
    the model and the trainer's optimizer built on ``meta`` tensors, so that nothing is
    allocated. The delay wrapper is measured with the rest up to ``QUEUE_MEASURED_UP_TO``;
    beyond, its queue is :func:`queue_bytes` and the state the synchronous optimizer's;
    pipedream's stale iterates are tau_k copies of block k. ``model_copies``: extra
    whole-model copies (a pipeline rank builds the whole model)."""
    with torch.device("meta"):
        model = Llama(mcfg)
    params = dict(model.named_parameters())
    p = tree_bytes(params)
    delay = cfg.delay
    if delay.wrapped and delay.tau > QUEUE_MEASURED_UP_TO:
        sync = dataclasses.replace(cfg, delay=Delay())   # the undelayed optimizer: its own state only
        inner = build_optimizer(sync, params)[0]
        state_b, queue = tree_bytes(inner.init(params)), queue_bytes(delay_taus(cfg, params), params)
    else:
        state = build_optimizer(cfg, params)[0].init(params)
        queue = tree_bytes(state, under="pending")
        state_b = tree_bytes(state) - queue
    if delay.stale_point:
        _, delays = make_history(cfg, model, params)
        queue += queue_bytes(delays, params)
    return MemoryCost(params=p, grads=p, opt_state=state_b, delay_queue=queue,
                      activations=activation_bytes(mcfg, cfg.batch_size, cfg.seq_len),
                      copies=model_copies * p, tau=delay.tau)
