"""The machine as a noise source (docs/protocol.md §7), on a fixture spread file in
cross_machine's format 1: per-regime tolerance, the variance a mixed pair adds, the README
sentence, and a verdict that mixes machine kinds."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from paper_figs.statistics import machine_noise as mn
from paper_figs.statistics.seed_stats import Measured, Noise, estimate, paired
from paper_figs.statistics.verdicts import HOLDS, INCONCLUSIVE, larger_gap

ROOT = Path(__file__).resolve().parents[2]


def _row(regime, diff, i):
    return {"key": f"{i:016x}", "regime": regime, "settings": {}, "kept_on": "Intel(R) Xeon(R) Processor x2",
            "kept": 1.4, "here": 1.4 + diff, "diff": diff, "curve_diff": {}, "seconds": 100}


FIXTURE = {"format": 1, "measured_on": "AMD EPYC x2 [AVX2]", "provenance": {}, "salt": "cross-machine sample v1",
           "rows": [_row("sync", d, i) for i, d in enumerate((0.001, -0.002, 0.0005))]
           + [_row("high lr", d, 10 + i) for i, d in enumerate((0.004, -0.023, 0.01))]}


@pytest.fixture
def spread(tmp_path):
    f = tmp_path / "spread.json"
    f.write_text(json.dumps(FIXTURE))
    return mn.load(f)


def test_per_regime_spread_tolerance_and_variance(spread):
    assert spread.present and spread.per_regime["sync"]["n"] == 3
    rms = math.sqrt((0.004 ** 2 + 0.023 ** 2 + 0.01 ** 2) / 3)
    assert spread.rms_for(["high lr", "sync"])[:2] == (pytest.approx(rms), 3)
    tol, why = spread.tolerance("high lr")
    assert tol == pytest.approx(2 * 0.023) and "n=3" in why
    assert spread.tolerance("MoE")[0] == 0.01                           # not measured: the default
    assert spread.rms_for(["MoE"])[0] == pytest.approx(rms) and "not measured" in spread.rms_for(["MoE"])[2]
    table = "\n".join(mn.table(spread))
    assert "| high lr | 3 |" in table and "| MoE | 0 |" in table


def test_a_missing_file_is_absent_and_a_wrong_format_is_refused(tmp_path):
    assert not mn.load(tmp_path / "none.json").present
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**FIXTURE, "format": 2}))
    with pytest.raises(ValueError, match="format"):
        mn.load(bad)


def test_same_kind_needs_the_same_model_and_the_same_recorded_capability():
    assert mn.same_kind("AMD EPYC x2 [AVX2]", "AMD EPYC x2 [AVX2]")
    assert mn.same_kind("AMD EPYC x2", "AMD EPYC x2")
    assert not mn.same_kind("AMD EPYC x2", "AMD EPYC x2 [AVX512]")   # one model, two instruction sets
    assert not mn.same_kind("AMD EPYC x2 [AVX2]", "AMD EPYC x2 [AVX512]")
    assert not mn.same_kind("Intel(R) Xeon(R) Processor x2", "AMD EPYC x2")


def _runs(kinds_a, kinds_b, gaps, regime="sync"):
    a = [Measured(1.4, f"a{i}", k, regime) for i, k in enumerate(kinds_a)]
    b = [Measured(1.4 + g, f"b{i}", k, regime) for i, (k, g) in enumerate(zip(kinds_b, gaps))]
    return a, b


def test_a_pair_on_two_machine_kinds_adds_its_regimes_variance(spread):
    """k of n pairs mixed: + k rms^2 / n^2, with the regime's measured n as its dof."""
    a, b = _runs(["X", "X"], ["X", "Y"], [0.02, 0.03], "high lr")
    nz = Noise(0.01, 20, 5, machine=spread)
    e = estimate(paired(a, b), nz)
    rms = spread.rms_for(["high lr"])[0]
    assert e.se ** 2 == pytest.approx(0.01 ** 2 / 2 + rms ** 2 / 4)
    assert "1 of 2 pairs mix machine kinds" in e.machine
    same = estimate(paired(*_runs(["X", "X"], ["X", "X"], [0.02, 0.03])), nz)
    assert same.se ** 2 == pytest.approx(0.01 ** 2 / 2) and same.machine == "one machine kind"


def test_a_mixed_line_without_a_measured_spread_is_inconclusive(spread):
    """Planted: a clear difference, but one pair mixes kinds. With the spread measured the line
    is decided (and says which spread it added); without it, the SE cannot be stated."""
    a, b = _runs(["X", "X"], ["X", "Y"], [0.10, 0.10])
    r = [0.0, 0.0]
    measured = larger_gap(paired(a, b), r, noise=Noise(0.005, 20, 5, machine=spread))
    assert measured.status == HOLDS and "cross-machine SD" in measured.reason
    unmeasured = larger_gap(paired(a, b), r, noise=Noise(0.005, 20, 5, machine=mn.MachineSpread(False)))
    assert unmeasured.status == INCONCLUSIVE and "cross-machine spread not measured" in unmeasured.reason


def test_readme_states_what_the_spread_file_measured():
    """README's reproducibility sentence is the one generated from the measurement (or, until the
    file exists, the marked placeholder)."""
    sentence = mn.readme_sentence(mn.load())
    readme = re.sub(r"\s+", " ", (ROOT / "README.md").read_text())
    assert sentence in readme


def test_readme_sentence_from_a_measurement(spread):
    s = mn.readme_sentence(spread)
    assert "sync 0.0020 (n=3)" in s and "high lr 0.0230 (n=3)" in s and "AMD EPYC x2 [AVX2]" in s
    assert mn.readme_sentence(mn.MachineSpread(False)) == mn.PLACEHOLDER
