"""One pipeline stage: its slice of the model, its weight versions, its optimizer, and
the executor of a schedule's action list (:mod:`gpu_runs.pipeline.schedules`).

Weights are held functionally: a version is a dict name -> leaf tensor and a forward is
``torch.func.functional_call(module, version, inputs)``, so a microbatch's backward runs
through the graph of the version its forward used (weight stashing) however many newer
versions exist. The optimizer is the pure ``lmo`` protocol applied to this stage's
parameter block only; the one cross-stage quantity, the global gradient norm
``||g_t|| = sqrt(sum_s ||g_t^s||^2)`` for clipping, is an all-reduce of squared norms on a
separate process group, launched asynchronously at ``R`` and awaited at ``U``.

Activations and their gradients travel over torch.distributed P2P (gloo on CPU, NCCL on
GPU): forward activations with tag 0 from s to s+1, gradients with tag 1 from s to s-1,
evaluation activations with tag 2.

Tied embedding / head (one tensor ``embed.weight`` = ``lm_head.weight`` split across the
first and last stage): the first stage owns it (its optimizer, its delay, as
``gpu_runs.model.stage_of_params`` says); the last stage uses a copy. The last stage
sends its head gradient of step t to the first (tag 4) at R(t), where it is added to the
embedding gradient; the first sends every new version of the weight to the last (tag 3),
and the last stage's forward of microbatch k uses the version the first stage's forward
of k used (``tied_version_of``, derived from the first stage's action list). Each kind
of message travels on a channel where it is alone in its direction
(:mod:`gpu_runs.pipeline.channels`: NCCL matches by order, not by tag), and within a kind
the schedules' fixed microbatch order makes the FIFO matching unambiguous.
"""
from __future__ import annotations

import math
import time
from typing import Callable, Mapping

import torch
import torch.distributed as dist

from lmo.base import load_state_dict

from gpu_runs.pipeline.channels import TAG_ACT, TAG_EVAL, TAG_GRAD, TAG_TIED_G, TAG_TIED_W, channel_name
from gpu_runs.pipeline.schedules import Action
from gpu_runs.pipeline.stage_module import StageModule


# ----------------------------------------------------------------------------- clipping
def clip_coefficient(total_sq_norm: float, max_norm: float | None, eps: float = 1e-6) -> float:
    """c = min(1, max_norm / (||g|| + eps)) with ||g|| = sqrt(sum of squared norms)."""
    if max_norm is None or max_norm <= 0:
        return 1.0
    return min(1.0, max_norm / (math.sqrt(total_sq_norm) + eps))


# ----------------------------------------------------------------------------- engine
class StageEngine:
    """Executes one stage's action list.

    ``opt``: an ``lmo`` Optimizer over this stage's parameters. ``update_params``:
    which weights ``opt.update`` sees for step t, ``"stash"`` (the version step t's
    microbatches ran on: 2bw, sync) or ``"current"`` (the newest: pipedream).
    ``loss_scale``: the factor on each microbatch loss (1/M averages a step's
    microbatches). ``batch(mb) -> (x, y)`` gives microbatch ``mb``'s data.
    ``max_norm``: global-norm clipping threshold (None: no clipping, no all-reduce).
    ``rule`` (2bw): a :class:`gpu_runs.pipeline.delay.DelayRule` whose wrapper ``opt`` is;
    a synchronous step's U(t) creates x_{t+1} = x_t + a_t, an asynchronous one's creates
    x_{t+2} = x_{t+1} + a_{t+1} (``apply=False``: none). pipedream (``"current"``): the
    forward of microbatch k runs on u_{max(0, k - tau_s)}, and the last tau_s versions
    are kept (a checkpoint's stash).
    """

    def __init__(self, module: StageModule, stage: int, num_stages: int, opt, *,
                 batch: Callable[[int], tuple], act_shape: tuple, act_dtype=torch.float32,
                 loss_scale: float = 1.0, update_params: str = "stash",
                 max_norm: float | None = None, clip_eps: float = 1e-6, clip_group=None,
                 device="cpu", on_progress: Callable | None = None,
                 compute_hook: Callable | None = None, val_batches: list | None = None,
                 rule=None, tied: tuple | None = None, amp: bool = False,
                 rank_of: Callable[[int], int] | None = None, grad_reduce: Callable | None = None,
                 moe=None, channels: Mapping | None = None, comm_log: bool = False):
        if update_params not in ("stash", "current"):
            raise ValueError(f"update_params must be 'stash' or 'current', got {update_params!r}")
        self.module, self.stage, self.P = module, stage, num_stages
        self.first, self.last = stage == 0, stage == num_stages - 1
        self.opt, self.batch = opt, batch
        self.act_shape, self.act_dtype, self.device = tuple(act_shape), act_dtype, device
        self.loss_scale, self.update_params = loss_scale, update_params
        self.rule = rule  # gpu_runs.pipeline.delay.DelayRule (2bw): opt is then its wrapper
        self.amp = amp  # bf16 autocast on CUDA, as gpu_runs.train does there
        # --dp: a stage's global rank (gpu_runs.pipeline.data_parallel.Layout.rank_of) and the
        # gradient averaging over its dp group, applied in R(t) before everything else
        self.rank_of = rank_of or (lambda s: s)
        # tag -> process group of the kinds that leave the default group (channels.make_channels)
        self.channels = dict(channels or {})
        # --comm-log: every message in issue order, (op, peer rank, channel, tag, shape)
        self.comm_log: list | None = [] if comm_log else None
        self.grad_reduce = grad_reduce
        self.moe = moe  # gpu_runs.pipeline.moe.StageMoE: balance-loss term and routing statistics
        self.aux: dict = {}  # mb -> the stage's balance-loss term of that forward (MoE)
        # pipedream: stage s forwards microbatch k on u_{max(0, k - tau_s)}
        self.tau = num_stages - 1 - stage if update_params == "current" else 0
        self.max_norm, self.clip_eps, self.clip_group = max_norm, clip_eps, clip_group
        self.on_progress = on_progress or (lambda: None)
        self.compute_hook = compute_hook
        self.val_batches = val_batches or []
        self.val_losses: dict = {}  # step -> mean validation loss on x_{step+1}, last stage
        params = {k: v.detach().clone() for k, v in module.named_parameters()}
        # tied = ("owner", name, peer) on the first stage, ("user", name, peer, version_of) on the last
        self.tied = tied
        self.tied_role = None if tied is None else tied[0]
        if self.tied_role == "user":
            self.tied_name, self.tied_peer, self.tied_version_of = tied[1], tied[2], tied[3]
            self.tied_versions = {0: params.pop(self.tied_name).requires_grad_(True)}
            self.tied_count = 0  # versions received
            self.tied_used = 0  # the newest version a training forward has used
            self.tied_acc: dict = {}
        elif self.tied_role == "owner":
            self.tied_name, self.tied_peer = tied[1], tied[2]
        self.names = list(params)
        self.opt_state = opt.init(params)
        self.version_id = 0
        self.versions = {0: self._leaves(params)}  # id -> dict of leaf tensors
        self.step_version: dict = {}  # step -> version id its microbatches used
        self.stash: dict = {}  # mb -> (version id, input, output)
        self.acc: dict = {}  # step -> accumulated gradient
        self.pending: dict = {}  # step -> (gradient, squared norm tensor, work)
        self.sends: list = []
        self.losses: dict = {}  # step -> summed (scaled) loss, last stage
        self.grad_norms: dict = {}  # step -> global gradient norm before clipping
        self.ckpt_params = None  # x_{t+1} after the last U(t) (a checkpoint of t + 1 steps)
        self.restored_step = None  # resumed 2bw: U(start - 1) only creates x_{start+1}
        self.updated_through = -1  # the last step whose U ran
        self.waiting: list = []  # (step, gradient) whose squared norm is not launched yet
        self._eval_step = None

    @staticmethod
    def _leaves(params: Mapping) -> dict:
        return {k: v.detach().requires_grad_(True) for k, v in params.items()}

    @property
    def params(self) -> dict:
        """The current version, detached (the last stage's tied copy excluded: it is the
        first stage's)."""
        return {k: v.detach() for k, v in self.versions[self.version_id].items()}

    def set_params(self, params: Mapping) -> None:
        self.versions = {self.version_id: self._leaves({k: params[k].clone() for k in self.names})}

    # ------------------------------------------------------------------ comm
    def _send(self, t: torch.Tensor, dst: int, tag: int) -> None:
        self._note("send", dst, tag, t.shape)
        self.sends.append((dist.isend(t.contiguous(), self.rank_of(dst), group=self.channels.get(tag), tag=tag), t))
        if len(self.sends) > 64:
            self._reap()

    def _note(self, op: str, stage: int, tag: int, shape) -> None:
        if self.comm_log is not None:
            self.comm_log.append((op, self.rank_of(stage), channel_name(tag, self.channels), tag, list(shape)))

    def _reap(self, wait: bool = False) -> None:
        keep = []
        for w, t in self.sends:
            if wait:
                w.wait()
            elif not w.is_completed():
                keep.append((w, t))
        self.sends = keep

    def _recv(self, src: int, tag: int, shape: tuple | None = None) -> torch.Tensor:
        buf = torch.empty(shape or self.act_shape, dtype=self.act_dtype, device=self.device)
        self._note("recv", src, tag, buf.shape)
        dist.irecv(buf, self.rank_of(src), group=self.channels.get(tag), tag=tag).wait()
        self.on_progress()
        return buf

    # ------------------------------------------------------------------ actions
    def run(self, actions: list[Action], on_action: Callable | None = None) -> None:
        for a in actions:
            getattr(self, "_" + a.kind)(a)
            self.on_progress()
            if on_action is not None:
                on_action(a)
        if self.tied_role == "user":
            self._tied_leaf(("end", None))
        self._reap(wait=True)

    def _inputs(self, mb: int):
        x, y = self.batch(mb)
        if self.first:
            h = x.to(self.device)
        else:
            h = self._recv(self.stage - 1, TAG_ACT).requires_grad_(True)
        return h, (y.to(self.device) if self.last else None)

    def _tied_leaf(self, key) -> torch.Tensor:
        """User side: the owner's version of the tied weight for ("F", mb) or ("E", step)."""
        want = self.tied_version_of[key]
        while self.tied_count < want:
            w = self._recv(self.tied_peer, TAG_TIED_W, tuple(self.tied_versions[self.tied_count].shape))
            self.tied_count += 1
            self.tied_versions[self.tied_count] = w.requires_grad_(True)
        if key[0] != "E":  # an evaluation's (newer) version must not retire ones later forwards use
            self.tied_used = max(self.tied_used, want)
        return self.tied_versions[want]

    def _with_tied(self, version: dict, key) -> dict:
        if self.tied_role != "user":
            return version
        return {**version, self.tied_name: self._tied_leaf(key)}

    def _F(self, a: Action) -> None:
        h, y = self._inputs(a.mb)
        cur = self.version_id if self.update_params == "stash" else max(0, a.mb - self.tau)
        vid = self.step_version.setdefault(a.step, cur)
        if vid != cur:
            raise RuntimeError(f"stage {self.stage}: step {a.step} started on version {vid} "
                               f"but microbatch {a.mb} would run on {cur}")
        version = self._with_tied(self.versions[cur], ("F", a.mb))
        if self.compute_hook is not None:
            self.compute_hook("F")
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.amp):
            out = torch.func.functional_call(self.module, version, (h, y) if self.last else (h,))
        if not self.last:
            out = out.to(self.act_dtype)
        if self.last:
            self.losses[a.step] = self.losses.get(a.step, 0.0) + float(out.detach()) * self.loss_scale
            out = out * self.loss_scale
        else:
            self._send(out.detach(), self.stage + 1, TAG_ACT)
        aux = self.moe.after_forward(a.step) if self.moe is not None else None
        if aux is not None:  # its own term of the objective, scaled as the microbatch loss
            self.aux[a.mb] = aux * self.loss_scale
        self.stash[a.mb] = (cur, h, out, version.get(getattr(self, "tied_name", None)))

    def _B(self, a: Action) -> None:
        vid, h, out, tied_leaf = self.stash.pop(a.mb)
        version = self.versions[vid]
        grad_out = None if self.last else self._recv(self.stage + 1, TAG_GRAD)
        if self.compute_hook is not None:
            self.compute_hook("B")
        wrt = ([] if self.first else [h]) + [version[k] for k in self.names]
        if self.tied_role == "user":
            wrt.append(tied_leaf)
        outs, gouts = [out], [grad_out]
        if a.mb in self.aux:
            outs.append(self.aux.pop(a.mb))
            gouts.append(None)
        grads = torch.autograd.grad(outs, wrt, grad_outputs=gouts, allow_unused=True)
        if not self.first:
            self._send(grads[0], self.stage - 1, TAG_GRAD)
            grads = grads[1:]
        if self.tied_role == "user":
            tg, grads = grads[-1], grads[:-1]
            prev = self.tied_acc.get(a.step)
            self.tied_acc[a.step] = tg if prev is None else prev + tg
        acc = self.acc.get(a.step)
        new = {k: (torch.zeros_like(version[k]) if g is None else g) for k, g in zip(self.names, grads)}
        self.acc[a.step] = new if acc is None else {k: acc[k] + new[k] for k in self.names}
        self._gc()

    def _R(self, a: Action) -> None:
        g = self.acc.pop(a.step)
        if self.tied_role == "user":
            self._send(self.tied_acc.pop(a.step), self.tied_peer, TAG_TIED_G)
        elif self.tied_role == "owner":
            w = g[self.tied_name]
            g = {**g, self.tied_name: w + self._recv(self.tied_peer, TAG_TIED_G, tuple(w.shape))}
        if self.grad_reduce is not None:
            g = self.grad_reduce(g)
        self.waiting.append((a.step, g))
        self._launch_ready()

    def _launch_ready(self) -> None:
        """Start the squared-norm all-reduce of the waiting steps, in step order. With
        DC-ASGD step t's gradient is first corrected by y_t - x_t, known once U(t - 1) ran
        (on the last 2bw stage R(t) comes before U(t - 1): it waits until then)."""
        while self.waiting:
            t, g = self.waiting[0]
            if self.rule is not None and self.rule.dc_asgd:
                if self.updated_through < t - 1:
                    return
                g = self.rule.correct(g, self.opt_state)
            self.waiting.pop(0)
            sq = torch.zeros((), dtype=torch.float64, device=self.device)
            for v in g.values():
                sq = sq + v.detach().double().pow(2).sum()
            work = None
            if self.max_norm is not None and self.P > 1:
                work = dist.all_reduce(sq, group=self.clip_group, async_op=True)
            self.pending[t] = (g, sq, work)

    def restore(self, params: Mapping, opt_flat: Mapping, step: int,
                tied_versions: Mapping | None = None, versions: Mapping | None = None) -> None:
        """Continue from a checkpoint taken after ``step`` steps: the weights x_step and the
        optimizer state after ``step`` updates (2bw: the wrapper's, with the pending
        d_{step-1}; a resumed U(step - 1) creates x_{step+1} from it). pipedream:
        ``versions`` {k: u_k} for k = step - tau_s .. step (the stashed ones); the tied
        user gets the owner's versions ``tied_versions`` {k: w_k} likewise."""
        dev = lambda t: {k: v.to(self.device) for k, v in t.items()}
        self.opt_state = load_state_dict(self.opt_state, dev(opt_flat))
        self.restored_step = step - 1 if self.rule is not None else None
        self.updated_through = step - 1
        if versions:
            self.version_id = step
            self.versions = {int(i): self._leaves({k: v.to(self.device).clone() for k, v in p.items()
                                                   if k in self.names}) for i, p in versions.items()}
        else:
            self.set_params(dev(params))
        if self.tied_role == "user":
            tv = {int(i): w for i, w in tied_versions.items()}
            self.tied_versions = {i: w.to(self.device).clone().requires_grad_(True) for i, w in tv.items()}
            self.tied_count, self.tied_used = max(tv), min(tv)

    def _U(self, a: Action) -> None:
        if self.restored_step == a.step:  # resumed 2bw: x_{t+2} = x_{t+1} + a_{t+1}
            self.restored_step = None
            self._apply(a, self.rule.next_applied(self.opt_state), ahead=True)
            return
        if a.step not in self.pending:
            self._launch_ready()
        g, sq, work = self.pending.pop(a.step)
        if work is not None:
            work.wait()
        total = float(sq)
        self.grad_norms[a.step] = math.sqrt(total)
        c = clip_coefficient(total, self.max_norm, self.clip_eps)
        if c != 1.0:
            g = {k: v * c for k, v in g.items()}
        vid = self.step_version.pop(a.step)
        base = self.versions[vid if self.update_params == "stash" else self.version_id]
        base = {k: v.detach() for k, v in base.items()}
        updates, self.opt_state = self.opt.update(g, self.opt_state, base)
        self.updated_through = a.step
        if self.rule is None or self.rule.is_sync(a.step):
            self._apply(a, updates)  # x_{t+1} = x_t + a_t (sync, pipedream, 2bw's flushed steps)
        else:  # 2bw: a_t was applied before step t + 1; create x_{t+2} = x_{t+1} + a_{t+1}
            self._apply(a, self.rule.next_applied(self.opt_state) if a.apply else None, ahead=True)
        self._launch_ready()

    def _apply(self, a: Action, updates: Mapping | None, ahead: bool = False) -> None:
        """New version = current + ``updates`` when ``a.apply``. ``ahead``: the new version
        is x_{t+2} (2bw), so the checkpoint of t + 1 steps holds the previous one, x_{t+1}."""
        cur = self.versions[self.version_id]
        if a.apply:
            self.version_id += 1
            self.versions[self.version_id] = self._leaves(
                {k: cur[k].detach() + updates[k].to(cur[k].dtype) for k in self.names})
            if self.tied_role == "owner":
                self._send(self.versions[self.version_id][self.tied_name].detach(), self.tied_peer, TAG_TIED_W)
        src = cur if (ahead and a.apply) else self.versions[self.version_id]
        self.ckpt_params = {k: v.detach() for k, v in src.items()}
        self._gc()

    def checkpoint_versions(self) -> dict:
        """pipedream: {k: u_k} for the versions a resumed stage still forwards on."""
        lo = self.version_id - self.tau
        return {i: {k: v.detach().cpu() for k, v in p.items()} for i, p in self.versions.items() if i >= lo}

    def _gc(self) -> None:
        """Drop versions no stashed microbatch, open step or the present still needs."""
        live = {self.version_id} | {v[0] for v in self.stash.values()} | set(self.step_version.values())
        live |= set(range(self.version_id - self.tau, self.version_id))  # pipedream's u_{k - tau_s}
        for vid in [v for v in self.versions if v not in live]:
            del self.versions[vid]
        if self.tied_role == "user":
            keep = {id(v[3]) for v in self.stash.values()}
            for n in [n for n, w in self.tied_versions.items() if n < self.tied_used and id(w) not in keep]:
                del self.tied_versions[n]

    # ------------------------------------------------------------------ evaluation
    def _E(self, a: Action) -> None:
        self._eval_step = a.step
        losses = [self.eval_forward(x, y) for x, y in self.val_batches]
        if self.last:
            self.val_losses[a.step] = sum(losses) / max(1, len(losses))

    def eval_forward(self, x: torch.Tensor, y: torch.Tensor) -> float | None:
        """Forward-only pass of one batch on the current version; the last stage returns
        the loss, others return None. Every stage passes the batch (for its shape)."""
        with torch.no_grad():
            shape = (y.shape[0],) + self.act_shape[1:]
            h = x.to(self.device) if self.first else self._recv(self.stage - 1, TAG_EVAL, shape)
            version = self._with_tied(self.versions[self.version_id], ("E", self._eval_step))
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.amp):
                out = torch.func.functional_call(self.module, version,
                                                 (h, y.to(self.device)) if self.last else (h,))
            if not self.last:
                out = out.to(self.act_dtype)
        if self.last:
            return float(out)
        self._send(out, self.stage + 1, TAG_EVAL)
        return None
