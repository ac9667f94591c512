"""The variant list is named once (lmo.variants) and every package uses those names."""
import pytest

from lmo.variants import EF, MODES, ONE_STEP, PIPEDREAM, SYNC, TWO_BW, VARIANTS, Delay


def test_names_are_the_ones_users_type():
    # the spellings of --delay / --variants and of the sweep's run directories
    assert VARIANTS == ("sync", "2bw", "ef", "pipedream")
    assert MODES == ("sync", "2bw", "pipedream")
    assert ONE_STEP == ("sync", "2bw", "ef")
    assert (SYNC, TWO_BW, EF, PIPEDREAM) == VARIANTS


@pytest.mark.parametrize("v, fields", [("sync", dict(mode="sync", ef=False)), ("2bw", dict(mode="2bw", ef=False)),
                                       ("ef", dict(mode="2bw", ef=True)),
                                       ("pipedream", dict(mode="pipedream", ef=False))])
def test_a_kind_and_its_flat_fields_are_inverse(v, fields):
    got = Delay(v).config_fields
    assert dict(mode=got["mode"], ef=got["ef"]) == fields
    assert Delay.of_config(**fields).kind == v


def test_bad_names_refused_naming_the_parameter():
    with pytest.raises(ValueError, match="delay kind"):
        Delay("2bw+ef")
    with pytest.raises(ValueError, match="mode"):
        Delay.of_config("async")
    with pytest.raises(ValueError, match="ef"):
        Delay.of_config("sync", ef=True)

