"""The variant list is named once (lmo.variants) and every package uses those names."""
import pytest

from lmo.variants import EF, MODES, ONE_STEP, PIPEDREAM, SYNC, TWO_BW, VARIANTS, mode_of, variant_of


def test_names_are_the_ones_users_type():
    # the spellings of --delay / --variants and of the sweep's run directories
    assert VARIANTS == ("sync", "2bw", "ef", "pipedream")
    assert MODES == ("sync", "2bw", "pipedream")
    assert ONE_STEP == ("sync", "2bw", "ef")
    assert (SYNC, TWO_BW, EF, PIPEDREAM) == VARIANTS


@pytest.mark.parametrize("v, fields", [("sync", dict(mode="sync", ef=False)), ("2bw", dict(mode="2bw", ef=False)),
                                       ("ef", dict(mode="2bw", ef=True)),
                                       ("pipedream", dict(mode="pipedream", ef=False))])
def test_mode_of_and_variant_of_are_inverse(v, fields):
    assert mode_of(v) == fields
    assert variant_of(**fields) == v


def test_bad_names_refused_naming_the_parameter():
    with pytest.raises(ValueError, match="delay kind"):
        mode_of("2bw+ef")
    with pytest.raises(ValueError, match="mode"):
        variant_of("async")
    with pytest.raises(ValueError, match="ef"):
        variant_of("sync", ef=True)

