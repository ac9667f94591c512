"""The mixture-of-experts side of a pipeline stage: each stage's balance-loss term and the
routing statistics that reach the log (``--config tiny_moe``; gpu_runs.moe).

What the pipeline computes. Step t's batch is split into M microbatches of B/M sequences;
stage s runs its MoE layers l on microbatch m alone, so f_e and P_e (gpu_runs.moe) are that
microbatch's means and its balance loss is L_aux^{l,m}. The step's objective, summed over
the stages' backwards, is

    F_t = (1/M) sum_m [ CE_m + aux_loss_coef * sum_l L_aux^{l,m} ]
        = CE(batch) + aux_loss_coef * sum_l (1/M) sum_m L_aux^{l,m},

the batch cross-entropy (equal microbatches) plus the mean over microbatches of each
layer's per-microbatch balance loss. That mean is *not* the batch's L_aux^l (f_e P_e is not
additive over microbatches), and computing the batch's exactly would need every
microbatch's routing before any backward, i.e. a flush of the forward; so the trainer's
``aux_groups = M`` (gpu_runs.moe.grouped_balance_loss) computes this same F_t from one
batch, and a pipeline run's config.json records it (``gpu_runs.pipeline.llama.aux_groups``).
pipedream (a step is one microbatch) and M = 1 compute the batch's L_aux.

Each stage adds ``aux_loss_coef * sum of its layers' L_aux`` (scaled by 1/M) to the
backward of each microbatch (:meth:`StageMoE.after_forward`, the engine's ``aux`` term).
After the last forward of step t a stage sends its layers' [f_e ..., L_aux] rows, each
the mean over the step's M microbatches, to the last stage (P2P on a process group of its
own, so these messages never interleave with the engine's activations and tied weights:
NCCL matches a pair's P2P messages in posting order, ignoring tags). The
last stage's record of step t (written after U(t), which comes after every stage's
forwards of step t, so the message is already on its way) carries ``routing`` per layer,
as the trainer's (``load`` = f_e over the whole batch, ``aux_loss`` = the mean above), and
``train_loss`` = CE + aux_loss_coef * sum_l aux_loss^l, as the trainer's ``Llama.loss``.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from gpu_runs.moe import MoE
from gpu_runs.pipeline.channels import new_channel

#: P2P tag of the routing rows (on their own group; gloo matches tags, NCCL order)
TAG_ROUTING = 16


def stage_moe_names(model, ranges: list[range]) -> list[list[str]]:
    """Per stage, the names (``layers.{i}.…``, as in the full model) of its MoE modules."""
    return [[f"layers.{i}.{n}" for i in r for n, m in model.layers[i].named_modules() if isinstance(m, MoE)]
            for r in ranges]


def routing_record(names: list[str], rows: torch.Tensor) -> dict:
    """{name: the trainer's routing statistics} from rows [f_e ..., L_aux] per layer
    (gpu_runs.moe.MoE.last_stats's fields)."""
    out = {}
    for name, row in zip(names, rows.tolist()):
        load, aux = row[:-1], row[-1]
        e = len(load)
        out[name] = {"load": load, "load_max_over_uniform": max(load) * e,
                     "load_min_over_uniform": min(load) * e, "aux_loss": aux, "dropped": 0}
    return out


class StageMoE:
    """Balance-loss term and routing statistics of one stage (module docstring).

    ``module``: the stage's module (its MoE layers carry ``last_aux`` / ``last_stats`` after a
    forward); ``names``: every stage's MoE names (:func:`stage_moe_names`); ``M``:
    microbatches per step; ``coef``: aux_loss_coef; ``group``: the process group of the
    routing messages (every rank creates it, :func:`routing_group`; None: P == 1);
    ``device``: where the messages live (NCCL sends device tensors).
    """

    def __init__(self, module, stage: int, num_stages: int, names: list[list[str]], M: int, coef: float,
                 n_experts: int, group=None, device="cpu"):
        self.stage, self.P, self.M, self.coef, self.E = stage, num_stages, M, coef, n_experts
        self.device, self.group = device, group
        self.names = names
        self.sends: list = []  # (work, tensor) of the routing rows in flight
        mods = dict(module.named_modules())
        self.mods = [mods[n] for n in names[stage]]
        self.rows: dict = {}  # step -> summed [f_e ..., L_aux] rows of this stage's layers
        self.count: dict = {}  # step -> forwards seen
        self.done: dict = {}  # last stage: step -> its own mean rows

    def after_forward(self, step: int):
        """Read the stage's MoE layers after a forward of a microbatch of ``step``: accumulate
        the routing rows (send them after the step's M-th forward) and return
        ``coef * sum_l L_aux^l`` with its graph (None if the stage has no MoE layer)."""
        if not self.mods:
            return None
        rows = torch.tensor([m.last_stats["load"] + [m.last_stats["aux_loss"]] for m in self.mods],
                            dtype=torch.float64)
        self.rows[step] = self.rows.get(step, 0) + rows
        self.count[step] = self.count.get(step, 0) + 1
        if self.count[step] == self.M:
            mean = self.rows.pop(step) / self.M
            del self.count[step]
            if self.stage == self.P - 1:
                self.done[step] = mean
            else:
                t = mean.to(self.device)
                self.sends = [(w, x) for w, x in self.sends if not w.is_completed()]
                self.sends.append((dist.isend(t, self.P - 1, group=self.group, tag=TAG_ROUTING), t))
        return self.coef * torch.stack([m.last_aux for m in self.mods]).sum()

    def gather(self, step: int) -> tuple[dict, float]:
        """Last stage: (routing of every MoE layer for ``step``, coef * sum_l aux_loss^l), after
        receiving every other stage's rows of that step (steps are gathered in order)."""
        routing = {}
        for s in range(self.P):
            if not self.names[s]:
                continue
            if s == self.P - 1:
                rows = self.done.pop(step)
            else:
                rows = torch.empty(len(self.names[s]), self.E + 1, dtype=torch.float64, device=self.device)
                dist.recv(rows, s, group=self.group, tag=TAG_ROUTING)
                rows = rows.cpu()
            routing.update(routing_record(self.names[s], rows))
        return routing, self.coef * sum(r["aux_loss"] for r in routing.values())

    def finish(self) -> None:
        """Wait for this stage's routing messages still in flight (after the schedule)."""
        for w, _ in self.sends:
            w.wait()
        self.sends = []


def routing_group(num_stages: int, timeout_s: float):
    """A process group for the routing messages (a collective call: every rank, same point)."""
    if num_stages == 1:
        return None
    return new_channel(timeout_s)
