"""One pipeline stage: the executor of a schedule's action list
(:mod:`gpu_runs.pipeline.schedules`) over its slice of the model, made of three parts:

- communication, tied embedding / head included: :mod:`gpu_runs.pipeline.comm`;
- weight versions (weight stashing, pipedream's stale versions):
  :mod:`gpu_runs.pipeline.weight_versions`;
- the step rule (cross-stage clip, DC-ASGD, update, apply): :mod:`gpu_runs.pipeline.step_rule`.

The engine runs F (forward of a microbatch), B (its backward, summing the step's
gradient), R (the step's gradient is complete: tied and dp reductions, then the clip's
all-reduce is launched), U (the update creates a new version) and E (evaluation).
"""
from __future__ import annotations

from typing import Callable, Mapping

import torch

from gpu_runs.pipeline.channels import TAG_ACT, TAG_EVAL, TAG_GRAD
from gpu_runs.pipeline.comm import NoTied, StageComm
from gpu_runs.pipeline.schedules import Action
from gpu_runs.pipeline.stage_module import StageModule
from gpu_runs.pipeline.step_rule import StepRule
from gpu_runs.pipeline.weight_versions import WeightVersions


class StageEngine:
    """Executes one stage's action list.

    ``comm``: the stage's messages; ``weights``: its versions; ``steps``: its step rule
    (its optimizer); ``tied``: its part of a tied weight (``comm.tied_weight``).
    ``batch(mb) -> (x, y)`` gives microbatch ``mb``'s data; ``loss_scale``: the factor on
    each microbatch loss (1/M averages a step's microbatches). ``grad_reduce`` (--dp): the
    gradient averaging over the stage's dp group, applied in R(t) after the tied reduction.
    ``moe``: a :class:`gpu_runs.pipeline.moe.StageMoE` (balance loss, routing statistics);
    ``amp``: bf16 autocast on CUDA, as gpu_runs.train does there.
    """

    def __init__(self, module: StageModule, stage: int, num_stages: int, comm: StageComm,
                 weights: WeightVersions, steps: StepRule, tied: NoTied | None = None, *,
                 batch: Callable[[int], tuple], loss_scale: float = 1.0, amp: bool = False,
                 compute_hook: Callable | None = None, val_batches: list | None = None,
                 grad_reduce: Callable | None = None, moe=None):
        self.module, self.stage, self.P = module, stage, num_stages
        self.first, self.last = stage == 0, stage == num_stages - 1
        self.comm, self.weights, self.steps, self.tied = comm, weights, steps, tied or NoTied()
        self.batch, self.loss_scale, self.amp = batch, loss_scale, amp
        self.compute_hook, self.val_batches = compute_hook, val_batches or []
        self.grad_reduce, self.moe = grad_reduce, moe
        self.aux: dict = {}  # mb -> the stage's balance-loss term of that forward (MoE)
        self.stash: dict = {}  # mb -> (version id, input, output, tied leaf)
        self.acc: dict = {}  # step -> accumulated gradient
        self.losses: dict = {}  # step -> summed (scaled) loss, last stage
        self.val_losses: dict = {}  # step -> mean validation loss on x_{step+1}, last stage
        self.ckpt_params = None  # x_{t+1} after the last U(t) (a checkpoint of t + 1 steps)
        self._eval_step = None

    # ------------------------------------------------------------------ the parts' state
    @property
    def params(self) -> dict:
        """The current version, detached (the last stage's tied copy excluded: it is the
        first stage's)."""
        return self.weights.params

    @property
    def opt_state(self):
        return self.steps.opt_state

    @property
    def grad_norms(self) -> dict:
        """step -> global gradient norm before clipping."""
        return self.steps.grad_norms

    @property
    def comm_log(self) -> list | None:
        return self.comm.log

    @property
    def tied_role(self) -> str | None:
        return self.tied.role

    def checkpoint_versions(self) -> dict:
        return self.weights.checkpoint_versions()

    def restore(self, params: Mapping, opt_flat: Mapping, step: int,
                tied_versions: Mapping | None = None, versions: Mapping | None = None) -> None:
        """Continue from a checkpoint taken after ``step`` steps: the weights x_step and the
        optimizer state after ``step`` updates (2bw: the wrapper's, with the pending
        d_{step-1}; a resumed U(step - 1) creates x_{step+1} from it). pipedream:
        ``versions`` {k: u_k} for k = step - tau_s .. step (the stashed ones); the tied
        user gets the owner's versions ``tied_versions`` {k: w_k} likewise."""
        self.steps.restore(opt_flat, step)
        self.weights.restore(step, params, versions, self.comm.device)
        self.tied.restore(tied_versions)

    # ------------------------------------------------------------------ actions
    def run(self, actions: list[Action], on_action: Callable | None = None) -> None:
        for a in actions:
            getattr(self, "_" + a.kind)(a)
            self.comm.on_progress()
            if on_action is not None:
                on_action(a)
        self.tied.drain()
        self.comm.reap(wait=True)

    def _inputs(self, mb: int):
        x, y = self.batch(mb)
        if self.first:
            h = x.to(self.comm.device)
        else:
            h = self.comm.recv(self.stage - 1, TAG_ACT).requires_grad_(True)
        return h, (y.to(self.comm.device) if self.last else None)

    def _F(self, a: Action) -> None:
        h, y = self._inputs(a.mb)
        opened = self.weights.opened(a.step)
        cur = self.weights.for_forward(a.step, a.mb, self.steps.gradient_point(a.step))
        if cur < 0 and not opened:  # a look-ahead step's gradient point z_t: the tied owner sends it too
            self.tied.new_version(self.weights.versions[cur])
        version = self.tied.with_tied(self.weights.versions[cur], ("F", a.mb))
        if self.compute_hook is not None:
            self.compute_hook("F")
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.amp):
            out = torch.func.functional_call(self.module, version, (h, y) if self.last else (h,))
        if not self.last:
            out = out.to(self.comm.act_dtype)
        if self.last:
            self.losses[a.step] = self.losses.get(a.step, 0.0) + float(out.detach()) * self.loss_scale
            out = out * self.loss_scale
        else:
            self.comm.send(out.detach(), self.stage + 1, TAG_ACT)
        aux = self.moe.after_forward(a.step) if self.moe is not None else None
        if aux is not None:  # its own term of the objective, scaled as the microbatch loss
            self.aux[a.mb] = aux * self.loss_scale
        self.stash[a.mb] = (cur, h, out, version.get(self.tied.name))

    def _B(self, a: Action) -> None:
        vid, h, out, tied_leaf = self.stash.pop(a.mb)
        version, names = self.weights.versions[vid], self.weights.names
        grad_out = None if self.last else self.comm.recv(self.stage + 1, TAG_GRAD)
        if self.compute_hook is not None:
            self.compute_hook("B")
        wrt = ([] if self.first else [h]) + [version[k] for k in names] + self.tied.extra_wrt(tied_leaf)
        outs, gouts = [out], [grad_out]
        if a.mb in self.aux:
            outs.append(self.aux.pop(a.mb))
            gouts.append(None)
        grads = torch.autograd.grad(outs, wrt, grad_outputs=gouts, allow_unused=True)
        if not self.first:
            self.comm.send(grads[0], self.stage - 1, TAG_GRAD)
            grads = grads[1:]
        grads = self.tied.take_grad(a.step, grads)
        acc = self.acc.get(a.step)
        new = {k: (torch.zeros_like(version[k]) if g is None else g) for k, g in zip(names, grads)}
        self.acc[a.step] = new if acc is None else {k: acc[k] + new[k] for k in names}
        self._gc()

    def _R(self, a: Action) -> None:
        g = self.tied.reduce(a.step, self.acc.pop(a.step))
        if self.grad_reduce is not None:
            g = self.grad_reduce(g)
        self.steps.submit(a.step, g)

    def _U(self, a: Action) -> None:
        if self.steps.restored_step == a.step:  # resumed 2bw: x_{t+2} = x_{t+1} + a_{t+1}
            self._apply(a, self.steps.resumed_update(), ahead=True)
            return
        g = self.steps.clipped(a.step)
        updates, ahead = self.steps.update(a.step, g, self.weights.for_update(a.step), a.apply)
        self._apply(a, updates, ahead)
        self.steps.launch_ready()

    def _apply(self, a: Action, updates: Mapping | None, ahead: bool = False) -> None:
        """New version = current + ``updates`` when ``a.apply``. ``ahead``: the new version
        is x_{t+2} (2bw), so the checkpoint of t + 1 steps holds the previous one, x_{t+1}."""
        cur = self.weights.current
        if a.apply:
            self.tied.new_version(self.weights.push(updates))
        src = cur if (ahead and a.apply) else self.weights.current
        self.ckpt_params = {k: v.detach() for k, v in src.items()}
        self._gc()

    def _gc(self) -> None:
        """Drop versions no stashed microbatch, open step or the present still needs."""
        self.weights.gc(v[0] for v in self.stash.values())
        self.tied.gc(self.stash)

    # ------------------------------------------------------------------ evaluation
    def _E(self, a: Action) -> None:
        self._eval_step = a.step
        losses = [self.eval_forward(x, y) for x, y in self.val_batches]
        if self.last:
            self.val_losses[a.step] = sum(losses) / max(1, len(losses))

    def eval_forward(self, x: torch.Tensor, y: torch.Tensor) -> float | None:
        """Forward-only pass of one batch on the current version; the last stage returns
        the loss, others return None. Every stage passes the batch (for its shape)."""
        dev = self.comm.device
        with torch.no_grad():
            shape = (y.shape[0],) + self.comm.act_shape[1:]
            h = x.to(dev) if self.first else self.comm.recv(self.stage - 1, TAG_EVAL, shape)
            version = self.tied.with_tied(self.weights.current, ("E", self._eval_step))
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.amp):
                out = torch.func.functional_call(self.module, version, (h, y.to(dev)) if self.last else (h,))
            if not self.last:
                out = out.to(self.comm.act_dtype)
        if self.last:
            return float(out)
        self.comm.send(out, self.stage + 1, TAG_EVAL)
        return None
