"""theory.dynamics.predictions: its inputs are the optimizers' presets, its mechanisms meet their
exact limits, the stall model reproduces the tau = 1 gap it is fitted on, and docs/tau_law.md
prints what the code computes."""
import inspect
import math
from pathlib import Path

import pytest

import lmo
from lmo import presets
from lmo.layer_geometry import scion
from theory.dynamics import predictions as P

ROOT = Path(__file__).resolve().parents[2]


def test_families_are_the_presets():
    for name, f in P.FAMILIES.items():
        assert math.isclose(f.mu, 1 - presets.DEFAULT_MOMENTUM[name]), name
    assert inspect.signature(lmo.muon).parameters["nesterov"].default is True
    assert inspect.signature(scion).parameters["nesterov"].default is True
    assert "nesterov" not in inspect.signature(lmo.adamw).parameters
    assert not P.FAMILIES["adamw"].nesterov and P.FAMILIES["muon"].nesterov and P.FAMILIES["scion"].nesterov


def test_head_steps_are_the_presets():
    from gpu_runs.model import CONFIGS
    radius = inspect.signature(scion).parameters["head_radius"].default
    assert math.isclose(P.HEAD_STEPS["scion"], presets.DEFAULT_LR["scion"] * radius / CONFIGS["tiny"].d_model)
    assert math.isclose(P.HEAD_STEPS["muon"], presets.DEFAULT_LR["adamw"])
    assert 40 < P.head_gain_ratio() < 55


def test_edges_meet_their_closed_forms():
    e = P.edges("adamw")
    assert math.isclose(e[0], 38.0, rel_tol=1e-9) and math.isclose(e[1], 1.0, rel_tol=1e-9)
    assert all(e[a] > e[b] for a, b in zip((0,) + P.TAUS, P.TAUS))
    assert P.unstable_lr("muon", 1)[1] == 1.0


def test_relay_ratios_meet_the_exact_law_without_momentum(monkeypatch):
    monkeypatch.setitem(P.FAMILIES, "plain_sign", P.Family(1.0, False, "relay"))
    r = P.relay_ratios("plain_sign")
    assert math.isclose(r[(8, 2)][0], 12.0, rel_tol=0.02) and math.isclose(r[(4, 1)][0], 10.0, rel_tol=0.02)
    assert not math.isclose(r[(8, 2)][0], 4.0, rel_tol=0.2)   # the bound's linear law is told apart


def test_the_linear_regime_is_the_bounds_linear_law_at_small_k_and_grows_towards_the_edge():
    small, near = P.linear_ratios("adamw", 1e-4), P.linear_ratios("adamw", 0.9)
    for (hi, lo), v in small.items():
        assert math.isclose(v, hi / lo, rel_tol=1e-2), (hi, lo, v)
    assert near[(8, 2)] > 5 * small[(8, 2)]


def test_the_stall_model_reproduces_its_tau1_input_and_predicts_a_growing_gap():
    for x in ("loglinear", "power"):
        fit = P.adamw_fit(x)
        assert math.isclose(fit["gaps"][1], P.TAU1_INPUTS["adamw_gap_tau1"], rel_tol=1e-6)
        assert P.edges("adamw")[1] < fit["K"] < P.edges("adamw")[0] and not fit["sync_capped"]
        g = [fit["gaps"][t] for t in P.TAUS]
        assert all(b > a for a, b in zip(g, g[1:]))
    lin, pw = P.adamw_fit("loglinear")["gaps"], P.adamw_fit("power")["gaps"]
    assert all(pw[t] >= lin[t] - 1e-12 for t in P.TAUS)
    # the log-linear curve through the inputs is the inputs
    L = P._loglinear(P.TAU1_INPUTS["adamw_sync_lr_curve"])
    for s, v in P.TAU1_INPUTS["adamw_sync_lr_curve"].items():
        assert math.isclose(L(s), v)


def test_the_edge_oscillation_is_the_squared_edge_ratio_and_widens_the_stall_interval():
    e, osc = P.edges("adamw"), P.edge_oscillation_ratios("adamw")
    assert math.isclose(osc[(8, 2)], (e[2] / e[8]) ** 2) and math.isclose(osc[(4, 1)], (e[1] / e[4]) ** 2)
    pred = P.predictions()["adamw"]
    for q in P.PAIRS:
        lo, hi = pred["combined"][q]
        assert lo <= min(pred["ratios"][q][0], osc[q]) and hi >= max(pred["ratios"][q][1], osc[q])


def test_predictions_have_every_optimizer_and_pair():
    pred = P.predictions()
    assert set(pred) == {"adamw", "muon", "scion"}
    for name, p in pred.items():
        for q in P.PAIRS:
            lo, hi = p["ratios"][q]
            assert lo <= p["point"][q] <= hi and lo > 1, (name, q)
    assert pred["adamw"]["point"][(8, 2)] < pred["muon"]["point"][(8, 2)]   # the model's ordering
    assert pred["scion"]["gaps"] is None and pred["muon"]["gaps"][1][0] == pytest.approx(P.TAU1_INPUTS["muon_gap_tau1"])


def test_the_doc_prints_what_the_code_computes():
    doc = (ROOT / "docs" / "tau_law.md").read_text()
    pred = P.predictions()
    assert P.markdown_table(pred) in doc
    assert P.edges_table(pred) in doc
