"""Delays beyond one step (issue 41, item 2): lmo.delayed with a uniform tau in {1, 2, 4, 8}
and with per-block profiles (the original PipeDream's tau_s = P - 1 - s, 2BW's constant 1),
against a hand-written queue; and the attribution profiles of lmo.delay_profiles (delay
only the matrix group, only the AdamW group, or both)."""
import pytest
import torch

from lmo.adam_family import adamw
from lmo.muon_family import muon
from lmo.combine import muon_labels
from lmo.delay import delayed
from lmo.delay_profiles import delay_by_label
from lmo.layer_geometry import scion_labels
from lmo.pipedream import contiguous_stages, pipedream_delays
from lmo.registry import build

from lmo_toy import make, run

SHAPES = (("e", (6, 3)), ("l1", (3, 3)), ("l2", (4, 3)), ("h", (5, 3)))


def hand_queue(inner, x0, grad, delays, steps):
    """Block k applies the update its inner optimizer computed tau_k steps earlier (zero
    while its queue fills): one list of past updates, indexed by hand."""
    x, s, computed, traj = dict(x0), inner.init(x0), [], [dict(x0)]
    for t in range(steps):
        d, s = inner.update(grad(x), s, x)
        computed.append(d)
        x = {k: x[k] + (computed[t - tau][k] if t >= tau else torch.zeros_like(x[k]))
             for k, tau in delays.items()}
        traj.append(x)
    return traj


@pytest.mark.parametrize("tau", [1, 2, 4, 8])
@pytest.mark.parametrize("inner", ["adamw", "muon"])
def test_uniform_delay_equals_the_hand_queue(tau, inner):
    x0, grad = make(41, shapes=SHAPES)
    make_inner = {"adamw": lambda: adamw(0.01, weight_decay=0.1),
                  "muon": lambda: muon(0.02, ns_dtype=torch.float64)}[inner]
    ours, _ = run(delayed(make_inner(), tau), x0, grad, 30)
    ref = hand_queue(make_inner(), x0, grad, {k: tau for k in x0}, 30)
    for t in range(31):
        assert all(torch.equal(ours[t][k], ref[t][k]) for k in x0), (t, tau)


@pytest.mark.parametrize("P", [2, 3, 4])
def test_pipedream_profile_equals_the_hand_queue(P):
    """tau_s = P - 1 - s over contiguous stages (the embedding the stalest, the head fresh)."""
    x0, grad = make(42, shapes=SHAPES)
    delays = pipedream_delays(contiguous_stages(list(x0), P), P)
    assert delays["e"] == P - 1 and delays["h"] == 0
    ours, _ = run(delayed(adamw(0.01, weight_decay=0.1), delays), x0, grad, 25)
    ref = hand_queue(adamw(0.01, weight_decay=0.1), x0, grad, delays, 25)
    for t in range(26):
        assert all(torch.equal(ours[t][k], ref[t][k]) for k in x0)


def test_two_bw_profile_is_the_uniform_one_step_delay():
    x0, grad = make(43, shapes=SHAPES)
    a, _ = run(delayed(adamw(0.01), {k: 1 for k in x0}), x0, grad, 12)
    b, _ = run(delayed(adamw(0.01), 1), x0, grad, 12)
    assert all(torch.equal(a[t][k], b[t][k]) for t in range(13) for k in x0)


def _llama_like(seed=0):
    g = torch.Generator().manual_seed(seed)
    shapes = {"embed.weight": (16, 8), "layers.0.attn.q_proj.weight": (8, 8), "layers.0.mlp.up_proj.weight": (12, 8),
              "layers.0.attn_norm.weight": (8,), "norm.weight": (8,)}
    A = {k: torch.rand(s, generator=g, dtype=torch.float64) + 0.5 for k, s in shapes.items()}
    x0 = {k: torch.randn(s, generator=g, dtype=torch.float64) for k, s in shapes.items()}
    return x0, (lambda x: {k: A[k] * x[k] for k in x})          # separable: each block its own quadratic


@pytest.mark.parametrize("which", ["matrix", "other", "both"])
def test_attribution_delays_only_the_named_group(which):
    """muon + AdamW group; delay = 1 on the named group(s), 0 elsewhere: every block follows
    the synchronous run or the fully delayed run, bit for bit (separable objective, one
    optimizer per group)."""
    x0, grad = _llama_like(1)
    labels = muon_labels(x0)
    taus = {"matrix": int(which in ("matrix", "both")), "other": int(which in ("other", "both"))}
    profile = delay_by_label(labels, taus)
    assert profile == {k: taus[lab] for k, lab in labels.items()}
    mixed, _ = run(delayed(build("muon", x0, lr=0.02), profile), x0, grad, 15)
    sync, _ = run(build("muon", x0, lr=0.02), x0, grad, 15)
    full, _ = run(delayed(build("muon", x0, lr=0.02), 1), x0, grad, 15)
    for k, lab in labels.items():
        ref = full if taus[lab] else sync
        assert all(torch.equal(mixed[t][k], ref[t][k]) for t in range(16)), (k, which)


def test_attribution_profiles_for_scions_groups():
    x0, _ = _llama_like(2)
    labels = scion_labels(x0)
    profile = delay_by_label(labels, {"hidden": 1, "head": 0, "vector": 0})
    assert profile["layers.0.attn.q_proj.weight"] == 1 and profile["embed.weight"] == 0
    with pytest.raises(KeyError, match="no delay for labels \\['vector'\\]"):
        delay_by_label(labels, {"hidden": 1, "head": 0})
    with pytest.raises(ValueError, match="taus\\['head'\\]"):
        delay_by_label(labels, {"hidden": 1, "head": -1, "vector": 0})
