"""``Delay.of_run_variant(...).wrap`` is the one place a variant becomes its optimizer: each
variant gives the wrapper of docs/design.md §4, bit for bit the one the wrappers build by hand."""
from collections.abc import Mapping

import pytest
import torch

from lmo import Spectral, lmo_momentum
from lmo.delay import delayed
from lmo.ef_correction import error_feedback
from lmo.variants import DELAYED, EF, PIPEDREAM, RUN_VARIANTS, SYNC, THEORY_VARIANTS, TWO_BW, Delay, theory_variant


def wrap(opt, variant, *, delay=None, total_steps=None, **mitigations):
    """The verifier's spelling: a run variant, its delay (an int or a per-block mapping)."""
    taus = delay if isinstance(delay, Mapping) else None
    return Delay.of_run_variant(variant, delay, **mitigations).wrap(opt, total_steps, taus)


def _base():
    return lmo_momentum(0.1, Spectral(), mu=0.3)


def _run(opt, steps=6, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = {"w": torch.randn(4, 3, generator=gen)}
    state = opt.init(x)
    for _ in range(steps):
        g = {"w": torch.randn(4, 3, generator=gen)}
        d, state = opt.update(g, state, x)
        x = {k: x[k] + d[k] for k in x}
    return x


@pytest.mark.parametrize("variant, by_hand", [
    (SYNC, lambda o: o),
    (TWO_BW, lambda o: delayed(o, 1)),
    (EF, lambda o: error_feedback(o)),
    (DELAYED, lambda o: delayed(o, 1)),
])
def test_each_variant_is_its_wrapper(variant, by_hand):
    a, b = wrap(_base(), variant), by_hand(_base())
    assert a.name == b.name and a.hyper == b.hyper
    assert torch.equal(_run(a)["w"], _run(b)["w"])


def test_mitigations_and_delays_reach_the_wrapper():
    kw = dict(sync_start=2, sync_cooldown=1, total_steps=6, dc_asgd=0.5)
    for variant, by_hand in ((TWO_BW, lambda o: delayed(o, 1, **kw)), (EF, lambda o: error_feedback(o, **kw))):
        a, b = wrap(_base(), variant, **kw), by_hand(_base())
        assert a.hyper == b.hyper and torch.equal(_run(a)["w"], _run(b)["w"])
    a, b = wrap(_base(), DELAYED, delay=3), delayed(_base(), 3)
    assert a.hyper == b.hyper and torch.equal(_run(a)["w"], _run(b)["w"])
    # pipedream: the loop's stale-point model (no wrapper), or the update-delay model with delays
    base = _base()
    assert wrap(base, PIPEDREAM) is base
    assert wrap(_base(), PIPEDREAM, delay={"w": 2}).hyper == delayed(_base(), {"w": 2}).hyper


def test_refusals_name_the_parameter():
    with pytest.raises(ValueError, match="delay kind"):
        wrap(_base(), "async")
    with pytest.raises(ValueError, match="dc_asgd"):
        wrap(_base(), SYNC, dc_asgd=0.1)
    with pytest.raises(ValueError, match="sync_start"):
        wrap(_base(), PIPEDREAM, sync_start=1)
    with pytest.raises(ValueError, match="delay"):
        wrap(_base(), TWO_BW, delay=0)
    with pytest.raises(ValueError, match="delay"):
        wrap(_base(), EF, delay=2)


def test_theory_names_match_lmos():
    # theory imports nothing of ours (docs/design.md §2), so it spells its bound variants
    # itself; they must be lmo.variants' names
    from theory.records import bound
    assert bound.VARIANTS == THEORY_VARIANTS
    assert {theory_variant(v) for v in RUN_VARIANTS} == set(THEORY_VARIANTS)
    assert theory_variant(TWO_BW) == theory_variant(PIPEDREAM) == DELAYED
