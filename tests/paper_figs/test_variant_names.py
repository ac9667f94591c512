"""Every package spells the variant list as lmo.variants does (sync / 2bw / ef / pipedream)."""
from lmo.variants import MODES, ONE_STEP, VARIANTS, Delay


def test_every_package_uses_the_one_list():
    from gpu_runs import predict, recipe, sweep
    from paper_figs.figures import plotting
    from paper_figs.figures import common
    from paper_figs.records.profiles import get_profile

    assert recipe.MODES is MODES and sweep.VARIANTS is ONE_STEP and common.VARIANTS is ONE_STEP
    assert set(predict.BOUND_OF) == set(ONE_STEP)
    assert set(VARIANTS) <= set(plotting.VARIANT_STYLE)
    p = get_profile("micro")
    for v in VARIANTS:     # a figure's run of variant v is the trainer's configuration of v
        s = common.variant(p, "adamw", v, 2 if v == "pipedream" else None, seed=0)   # PipeDream: its stage count
        assert Delay.of_config(s["mode"], bool(s.get("ef"))).kind == v
        assert predict.variant(dict(s, ef=bool(s.get("ef")))) == v


def test_the_papers_losses_are_keyed_by_the_same_names():
    from paper_figs.statistics import paper_numbers as pn

    for row in pn.LOSSES.values():
        assert tuple(row) == ONE_STEP
