"""lmo.variants.Delay, the delay of a run as one value: every rule refused once, at
construction, with its message; the flat configuration fields round-trip; ``Delay.wrap``
builds bit for bit the wrapper the kind names (docs/design.md §4)."""
import dataclasses

import pytest
import torch

from lmo import Spectral, lmo_momentum
from lmo.delay import delayed
from lmo.ef_correction import error_feedback
from lmo.variants import EF, MODES, PIPEDREAM, SYNC, TWO_BW, VARIANTS, Delay, theory_variant

# every invalid value, and the words its one-line message must carry
INVALID = [
    (dict(kind="async"), ["delay", "must be one of"]),
    (dict(kind="delayed"), ["delay", "must be one of"]),
    (dict(kind=SYNC, tau=1), ["tau"]),
    (dict(kind=TWO_BW, tau=0), ["tau", ">= 1", "sync"]),
    (dict(kind=EF, tau=2), ["tau"]),
    (dict(kind=TWO_BW, corrector="dc_asgd"), ["corrector", "--dc-asgd"]),
    (dict(kind=TWO_BW, corrector="spectrain"), ["corrector", "must be one of"]),
    (dict(kind=TWO_BW, profile="gpipe"), ["profile", "must be one of"]),
    (dict(kind=TWO_BW, groups="embed"), ["groups", "must be one of"]),
    (dict(kind=TWO_BW, tau=2, sync_start=1), ["sync_start", "mitigates the one-step delay", "tau 1"]),
    (dict(kind=TWO_BW, groups="matrix", dc_asgd=0.1), ["dc_asgd", "mitigates", "delayed-groups"]),
    (dict(kind=TWO_BW, tau=3, profile="pipedream", groups="other"), ["pipedream profile", "all"]),
    (dict(kind=EF, tau=0), ["tau"]),
    (dict(kind=PIPEDREAM, tau=-1), ["stages", ">= 1"]),
    (dict(kind=TWO_BW, tau=True), ["tau", "int"]),
    (dict(kind=TWO_BW, sync_start=-1), ["sync_start", ">= 0"]),
    (dict(kind=TWO_BW, sync_cooldown=1.5), ["sync_cooldown", "int"]),
    (dict(kind=TWO_BW, sync_start=True), ["sync_start", "int"]),
    (dict(kind=EF, dc_asgd=-0.1), ["dc_asgd", ">= 0"]),
    (dict(kind=EF, dc_asgd=float("nan")), ["dc_asgd", "finite"]),
    (dict(kind=TWO_BW, dc_asgd=float("inf")), ["dc_asgd", "finite"]),
] + [(dict(kind=k, **{m: v}), [m, "mitigates the one-step delay", "2bw", k])
     for k in (SYNC, PIPEDREAM) for m, v in (("sync_start", 2), ("sync_cooldown", 1), ("dc_asgd", 0.1))] \
  + [(dict(kind=k, **{f: v}), [f"--{flag}", "needs --delay 2bw", k])
     for k in (SYNC, EF, PIPEDREAM) for f, v, flag in (("corrector", "weight_prediction", "corrector"),
                                                       ("groups", "matrix", "delayed-groups"))]


@pytest.mark.parametrize("kw, words", INVALID, ids=[str(kw) for kw, _ in INVALID])
def test_every_invalid_delay_is_refused_with_its_message(kw, words):
    with pytest.raises(ValueError) as e:
        Delay(**kw)
    msg = str(e.value)
    assert "\n" not in msg and all(w in msg for w in words), msg


@pytest.mark.parametrize("mode, ef, kw, words", [
    ("async", False, {}, ["mode", "must be one of"]),
    ("ef", False, {}, ["mode", "must be one of"]),           # the config spells ef as 2bw + ef=True
    (SYNC, True, {}, ["ef", "2bw", "sync"]),
    (PIPEDREAM, True, {}, ["ef", "2bw", "pipedream"]),
    (PIPEDREAM, False, dict(stages=0), ["stages"]),
    (SYNC, False, dict(dc_asgd=0.5), ["dc_asgd", "2bw"]),
])
def test_of_config_refuses_what_the_flat_fields_cannot_mean(mode, ef, kw, words):
    with pytest.raises(ValueError) as e:
        Delay.of_config(mode, ef, **kw)
    assert all(w in str(e.value) for w in words), str(e.value)


def test_valid_delays_and_their_config_fields():
    assert Delay() == Delay(SYNC) and Delay().tau == 0
    assert Delay.of_config(TWO_BW, True, 2, 1, 0.5) == Delay(EF, 1, 2, 1, 0.5)
    assert Delay.of_config(PIPEDREAM, stages=4).tau == 3 and Delay.of_config(SYNC, stages=4).tau == 0
    for kind in VARIANTS:
        d = Delay(kind)
        f = d.config_fields
        assert f["mode"] in MODES and Delay.of_config(**f) == d
        assert d.one_step == (kind in (TWO_BW, EF)) and d.stale_point == (kind == PIPEDREAM)
        assert d.theory_variant == theory_variant(kind)
        assert d.state_prefix == ("inner/" if d.one_step else "")
    with pytest.raises(dataclasses.FrozenInstanceError):
        Delay().kind = TWO_BW
    with pytest.raises(ValueError, match="sync_start"):       # replace() checks again
        dataclasses.replace(Delay(TWO_BW, sync_start=2), kind=SYNC, tau=None)


def test_labels_are_the_figures():
    assert Delay(SYNC).label == "synchronous"
    assert Delay(TWO_BW).label == "one-step delay (PipeDream-2BW)"
    assert Delay(EF).label == "one-step delay + error feedback"
    assert Delay(TWO_BW, dc_asgd=0.1).label == "delay + DC-ASGD"
    assert Delay(TWO_BW, sync_start=3).label == "delay + synchronous start"


def _base():
    return lmo_momentum(0.1, Spectral(), mu=0.3)


def _run(opt, steps=8, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = {"w": torch.randn(4, 3, generator=gen), "v": torch.randn(2, 5, generator=gen)}
    state = opt.init(x)
    for _ in range(steps):
        g = {k: torch.randn(v.shape, generator=gen) for k, v in x.items()}
        d, state = opt.update(g, state, x)
        x = {k: x[k] + d[k] for k in x}
    return x


MIT = dict(sync_start=2, sync_cooldown=1, dc_asgd=0.5)


@pytest.mark.parametrize("delay, by_hand", [
    (Delay(SYNC), lambda o: o),
    (Delay.of_config(PIPEDREAM, stages=3), lambda o: o),
    (Delay(TWO_BW), lambda o: delayed(o, 1, total_steps=8)),
    (Delay(EF), lambda o: error_feedback(o, total_steps=8)),
    (Delay(TWO_BW, **MIT), lambda o: delayed(o, 1, total_steps=8, **MIT)),
    (Delay(EF, **MIT), lambda o: error_feedback(o, total_steps=8, **MIT)),
], ids=["sync", "pipedream", "2bw", "ef", "2bw+mitigations", "ef+mitigations"])
def test_wrap_is_the_old_wrapper_bit_for_bit(delay, by_hand):
    base = _base()
    if not delay.one_step:
        assert delay.wrap(base, total_steps=8) is base
        return
    a, b = delay.wrap(_base(), total_steps=8), by_hand(_base())
    assert a.name == b.name and a.hyper == b.hyper
    xa, xb = _run(a), _run(b)
    assert all(torch.equal(xa[k], xb[k]) for k in xa)
    assert not torch.equal(xa["w"], _run(_base())["w"])       # the wrapper changes the trajectory
