"""A stage's communication: point-to-point messages to its neighbours (:class:`StageComm`)
and the tied embedding / head split across the first and last stage (:func:`tied_weight`).

Activations and their gradients travel over torch.distributed P2P (gloo on CPU, NCCL on
GPU): forward activations with tag 0 from s to s+1, gradients with tag 1 from s to s-1,
evaluation activations with tag 2. Each kind of message travels on a channel where it is
alone in its direction (:mod:`gpu_runs.pipeline.channels`: NCCL matches by order, not by
tag), and within a kind the schedules' fixed microbatch order makes the FIFO matching
unambiguous.

Tied embedding / head (one tensor ``embed.weight`` = ``lm_head.weight``): the first stage
owns it (its optimizer, its delay, as ``gpu_runs.model.stage_of_params`` says); the last
stage uses a copy. The last stage sends its head gradient of step t to the first (tag 4)
at R(t), where it is added to the embedding gradient; the first sends every new version of
the weight to the last (tag 3), and the last stage's forward of microbatch k uses the
version the first stage's forward of k used (``version_of``, derived from the first
stage's action list: :func:`tied_messages`). With a look-ahead corrector
the versions include each step's gradient point z_t, sent when the first stage creates it (its
step's first forward), in the same FIFO sequence as the x versions; an evaluation uses the x
version. Every stage has a tied object; the one of a stage without a tied weight does nothing.
"""
from __future__ import annotations

from typing import Callable, Mapping

import torch
import torch.distributed as dist

from gpu_runs.pipeline.channels import TAG_TIED_G, TAG_TIED_W, channel_name


class StageComm:
    """Sends (asynchronous, reaped every 64) and receives (blocking) of one stage.

    ``rank_of(stage)``: a stage's global rank (--dp: ``data_parallel.Layout.rank_of``);
    ``channels``: tag -> process group of the kinds that leave the default group
    (``channels.make_channels``); ``comm_log``: keep every message in issue order,
    (op, peer rank, channel, tag, shape), in :attr:`log`; ``on_progress`` after each
    receive (the watchdog's beat)."""

    def __init__(self, act_shape: tuple, act_dtype=torch.float32, device="cpu", *,
                 rank_of: Callable[[int], int] | None = None, channels: Mapping | None = None,
                 comm_log: bool = False, on_progress: Callable | None = None):
        self.act_shape, self.act_dtype, self.device = tuple(act_shape), act_dtype, device
        self.rank_of = rank_of or (lambda s: s)
        self.channels = dict(channels or {})
        self.log: list | None = [] if comm_log else None
        self.on_progress = on_progress or (lambda: None)
        self.sends: list = []

    def send(self, t: torch.Tensor, dst: int, tag: int) -> None:
        self._note("send", dst, tag, t.shape)
        self.sends.append((dist.isend(t.contiguous(), self.rank_of(dst), group=self.channels.get(tag), tag=tag), t))
        if len(self.sends) > 64:
            self.reap()

    def _note(self, op: str, stage: int, tag: int, shape) -> None:
        if self.log is not None:
            self.log.append((op, self.rank_of(stage), channel_name(tag, self.channels), tag, list(shape)))

    def reap(self, wait: bool = False) -> None:
        keep = []
        for w, t in self.sends:
            if wait:
                w.wait()
            elif not w.is_completed():
                keep.append((w, t))
        self.sends = keep

    def recv(self, src: int, tag: int, shape: tuple | None = None) -> torch.Tensor:
        buf = torch.empty(shape or self.act_shape, dtype=self.act_dtype, device=self.device)
        self._note("recv", src, tag, buf.shape)
        dist.irecv(buf, self.rank_of(src), group=self.channels.get(tag), tag=tag).wait()
        self.on_progress()
        return buf


class NoTied:
    """A stage without a tied weight (or P = 1): every hook is the identity."""
    role = None
    name = None

    def with_tied(self, version: dict, key) -> dict:
        """The weights of a forward for ("F", mb) / ("E", step): the version, plus the tied copy."""
        return version

    def extra_wrt(self, leaf) -> list:
        """What a backward also differentiates with respect to (the user's tied leaf)."""
        return []

    def take_grad(self, step: int, grads: tuple) -> tuple:
        """The backward's gradients without the tied one (the user accumulates it per step)."""
        return grads

    def reduce(self, step: int, g: dict) -> dict:
        """R(t): the user sends its head gradient, the owner adds it to the embedding's."""
        return g

    def new_version(self, version: Mapping) -> None:
        """The owner sends every new version of the weight (x_{t+1}, and a look-ahead step's z_t)."""

    def gc(self, stash: Mapping) -> None:
        """The user drops the versions no later forward uses."""

    def drain(self) -> None:
        """After the run: the user receives every version the owner sent."""

    def restore(self, tied_versions: Mapping | None) -> None:
        """A resumed user: the owner's versions it still forwards on."""


class TiedOwner(NoTied):
    """The first stage: owns the weight (its optimizer); receives the head gradient, sends versions."""
    role = "owner"

    def __init__(self, comm: StageComm, name: str, peer: int):
        self.comm, self.name, self.peer = comm, name, peer

    def reduce(self, step: int, g: dict) -> dict:
        w = g[self.name]
        return {**g, self.name: w + self.comm.recv(self.peer, TAG_TIED_G, tuple(w.shape))}

    def new_version(self, version: Mapping) -> None:
        self.comm.send(version[self.name].detach(), self.peer, TAG_TIED_W)


class TiedUser(NoTied):
    """The last stage: forwards on the owner's versions (``version_of``), sends the head gradient."""
    role = "user"

    def __init__(self, comm: StageComm, name: str, peer: int, version_of: Mapping, first: torch.Tensor):
        self.comm, self.name, self.peer, self.version_of = comm, name, peer, version_of
        self.versions = {0: first.requires_grad_(True)}
        self.count = 0  # versions received
        self.used = 0  # the newest version a training forward has used
        self.acc: dict = {}  # step -> accumulated head gradient
        # the evaluations still to run -> their message: a look-ahead run's E(t) is at x_{t+1}, which can be
        # older than the gradient point z_t the last forward used (gc keeps it)
        self.evals = {k: v for k, v in version_of.items() if k[0] == "E"}

    def leaf(self, key) -> torch.Tensor:
        """The owner's version of the tied weight for ("F", mb) / ("E", step) / ("end", None)."""
        want = self.version_of[key]
        while self.count < want:
            w = self.comm.recv(self.peer, TAG_TIED_W, tuple(self.versions[self.count].shape))
            self.count += 1
            self.versions[self.count] = w.requires_grad_(True)
        if key[0] != "E":  # an evaluation's (newer) version must not retire ones later forwards use
            self.used = max(self.used, want)
        w = self.versions[want]
        self.evals.pop(key, None)
        return w

    def with_tied(self, version: dict, key) -> dict:
        return {**version, self.name: self.leaf(key)}

    def extra_wrt(self, leaf) -> list:
        return [leaf]

    def take_grad(self, step: int, grads: tuple) -> tuple:
        tg, grads = grads[-1], grads[:-1]
        prev = self.acc.get(step)
        self.acc[step] = tg if prev is None else prev + tg
        return grads

    def reduce(self, step: int, g: dict) -> dict:
        self.comm.send(self.acc.pop(step), self.peer, TAG_TIED_G)
        return g

    def gc(self, stash: Mapping) -> None:
        keep, evals = {id(v[3]) for v in stash.values()}, set(self.evals.values())
        for n in [n for n, w in self.versions.items() if n < self.used and id(w) not in keep and n not in evals]:
            del self.versions[n]

    def drain(self) -> None:
        self.leaf(("end", None))

    def restore(self, tied_versions: Mapping | None) -> None:
        tv = {int(i): w for i, w in tied_versions.items()}
        self.versions = {i: w.to(self.comm.device).clone().requires_grad_(True) for i, w in tv.items()}
        self.count, self.used = max(tv), min(tv)


def tied_weight(tied: tuple | None, comm: StageComm, params: dict) -> NoTied:
    """The stage's tied object from ``worker.tied_role``'s ``tied``: ("owner", name, peer) on
    the first stage, ("user", name, peer, version_of) on the last, None elsewhere. The user's
    copy is taken out of ``params`` (it is not the user's to update)."""
    if tied is None:
        return NoTied()
    if tied[0] == "owner":
        return TiedOwner(comm, tied[1], tied[2])
    return TiedUser(comm, tied[1], tied[2], tied[3], params.pop(tied[1]))


def tied_messages(acts0, lookahead: bool = False) -> dict:
    """The owner's messages, numbered 1, 2, ... in the first stage's action list ``acts0`` (message 0:
    the weight both stages start from): a U that applies sends the new x version; with a look-ahead
    corrector a step's first F sends its gradient point z_t (``weight_versions``: the version the
    step's microbatches run on). ("F", mb) -> its step's z_t message (look-ahead), else the newest
    message at stage 0's forward of mb; ("E", t) -> the newest x message (evaluation is at x_{t+1},
    as the trainer's); ("end", None) -> every message (drained after the run)."""
    count, x_msg, version_of, z_msg = 0, 0, {}, {}
    for a in acts0:
        if a.kind == "U" and a.apply:
            count += 1
            x_msg = count
        elif a.kind == "F":
            if lookahead and a.step not in z_msg:
                count += 1
                z_msg[a.step] = count
            version_of[("F", a.mb)] = z_msg[a.step] if lookahead else count
        elif a.kind == "E":
            version_of[("E", a.step)] = x_msg
    version_of[("end", None)] = count
    return version_of
