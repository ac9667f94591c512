"""The stages' point-to-point channels: which message kind travels on which process group.

Message kinds (tags), each in one direction:

    TAG_ACT     s -> s+1      activation of a training microbatch, at F
    TAG_GRAD    s+1 -> s      gradient of that activation, at B
    TAG_EVAL    s -> s+1      activation of an evaluation batch, at E
    TAG_TIED_W  0 -> P-1      a new version of the tied embedding / head weight, at U
    TAG_TIED_G  P-1 -> 0      the head's gradient of a step, at R

gloo matches a receive to a send by (peer, tag); NCCL ignores tags and matches by issue
order on each (communicator, sender, receiver). So two kinds may share a communicator
and a direction only if both ends issue them in the same interleaving, and they do not:
under PipeDream stage s runs ``F(k)`` before ``E(t)`` where stage s+1 runs ``E(t)``
first (the evaluation follows each stage's own ``U(t)``), and with P = 2 the tied weight's
versions (0 -> 1 at U) interleave with the activations (0 -> 1 at F) differently on the
two ends. Every kind therefore gets a channel on which it is the only kind in its
direction:

    default group   ACT (forward) and GRAD (backward)
    eval group      EVAL
    tied group      TIED_W (0 -> P-1) and TIED_G (P-1 -> 0)

Within one kind both ends issue messages in the same order (the schedules' fixed
microbatch, step and evaluation order), which is what gloo's tag matching exercises on CPU,
so a run that is right on gloo is right on NCCL. (The MoE routing rows have their own
group and tag, :mod:`gpu_runs.pipeline.moe`.)
"""
from __future__ import annotations

import datetime
from typing import Mapping

import torch.distributed as dist

TAG_ACT, TAG_GRAD, TAG_EVAL, TAG_TIED_W, TAG_TIED_G = 0, 1, 2, 3, 4

#: tag -> (channel name, sender stage, receiver stage) as functions of (s, P)
DIRECTIONS = {
    TAG_ACT: ("default", lambda s, P: (s, s + 1)),
    TAG_GRAD: ("default", lambda s, P: (s + 1, s)),
    TAG_EVAL: ("eval", lambda s, P: (s, s + 1)),
    TAG_TIED_W: ("tied", lambda s, P: (0, P - 1)),
    TAG_TIED_G: ("tied", lambda s, P: (P - 1, 0)),
}


def shared_directions(num_stages: int, directions: Mapping = DIRECTIONS) -> list[tuple]:
    """Every (channel, sender, receiver) that carries more than one kind; must be empty.
    (One stage sends nothing.)"""
    seen: dict = {}
    for tag, (channel, ends) in directions.items():
        for s in range(num_stages - 1):
            seen.setdefault((channel, *ends(s, num_stages)), set()).add(tag)
    return sorted(k for k, tags in seen.items() if len(tags) > 1)


def channel_name(tag: int, channels: Mapping) -> str:
    """The channel a message of ``tag`` travels on given ``make_channels``'s mapping."""
    return DIRECTIONS[tag][0] if tag in channels else "default"


def order_mismatches(logs: Mapping[int, list]) -> list[str]:
    """Check NCCL's matching rule on the message logs of one run (``--comm-log``).

    ``logs``: rank -> its messages in issue order, each (op, peer, channel, tag, shape)
    with op "send" or "recv". On every (channel, sender, receiver) the sender's sequence
    of (tag, shape) must equal the receiver's: NCCL pairs the n-th send with the n-th
    receive whatever their tags. Returns a description of each place where they differ.
    """
    seqs: dict = {}
    for rank, msgs in logs.items():
        for op, peer, channel, tag, shape in msgs:
            src, dst = (rank, peer) if op == "send" else (peer, rank)
            seqs.setdefault((channel, src, dst), {"send": [], "recv": []})[op].append((tag, tuple(shape)))
    out = []
    for (channel, src, dst), ops in sorted(seqs.items()):
        sent, got = ops["send"], ops["recv"]
        if sent == got:
            continue
        n = next((i for i, (a, b) in enumerate(zip(sent, got)) if a != b), min(len(sent), len(got)))
        out.append(f"channel {channel} {src}->{dst}: message {n} sent as "
                   f"{sent[n] if n < len(sent) else 'nothing'}, received as {got[n] if n < len(got) else 'nothing'} "
                   f"({len(sent)} sent, {len(got)} received)")
    return out


def new_channel(timeout_s: float):
    """A new process group over every rank, the default group's backend: its own NCCL
    communicator, so its messages never queue behind another channel's (a collective call:
    every rank of the job, at the same point, in the same order)."""
    return dist.new_group(backend=dist.get_backend(), timeout=datetime.timedelta(seconds=timeout_s))


def make_channels(num_stages: int, timeout_s: float) -> Mapping[int, object]:
    """{tag: process group} for the kinds that leave the default group (collective, as
    :func:`new_channel`). Empty when P == 1."""
    if num_stages == 1:
        return {}
    eval_group, tied_group = new_channel(timeout_s), new_channel(timeout_s)
    return {TAG_EVAL: eval_group, TAG_TIED_W: tied_group, TAG_TIED_G: tied_group}
