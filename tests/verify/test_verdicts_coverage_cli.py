"""Three-state verdicts with r_w at the right confidence end, coverage of the one-sided bounds
on skewed data, the paper's readings C1/C2 against runs and the search, and the CLI's user errors."""
import numpy as np
import pytest
import sympy as sp
import torch
from scipy import stats

from lmo.geometry import Sign, Spectral
from theory.records.bound import Bound
from theory.records.registry import get
from theory.records.symbols import L, r_w
from verify import report
from verify.adversarial import search
from verify.check import check_bound, empirical_bernstein
from verify.coverage import coverage
from verify.montecarlo import MCResult, run
from verify.noise import Gaussian
from verify.problems import random_quadratic, vector_quadratic
from verify.strategies import Instance


def _fake(err, rw=None, eta=1.0):
    n, R = err.shape
    series = {"err_y": err, "r_w": np.zeros_like(err) if rw is None else rw,
              "r": np.zeros_like(err) if rw is None else rw}
    return MCResult(np.arange(n), series, {}, dict(L=1.0, sigma=1.0, rho=1.0, eta=eta, mu=0.5, Delta_0=1.0, K=n),
                    dict(variant="ef", seeds=R, problem="fake", noise="fake"))


def _bound(expr):
    return Bound("test_bound", expr, "momentum_error_y", "ef", ("A2",), "test", "derived", None)


def test_three_states():
    err = np.random.default_rng(0).normal(1.0, 0.1, (5, 64))
    c = {}
    for Lv in (0.5, 1.0, 2.0):
        res = _fake(err)
        res.constants["L"] = Lv
        c[Lv] = check_bound(_bound(L), res).verdict
    assert c == {0.5: "violated", 1.0: "not violated", 2.0: "holds confidently"}


def test_affine_r_w_bound_is_checked_on_the_paired_difference():
    """B = L r_w is affine in r_w: Q - L r_w per seed is tested against B(0) = 0, not r_w's
    empirical-Bernstein bounds (which with independent r_w in [0, 2] would straddle the mean)."""
    rng = np.random.default_rng(1)
    err = rng.normal(1.0, 0.02, (3, 64))
    rw = rng.uniform(0.0, 2.0, (3, 64))   # independent of err: D = err - rw has sd ~ 0.58
    r = check_bound(_bound(L * r_w), _fake(err, rw))
    assert r.verdict == "not violated"
    assert "3 tests" in r.ci and "paired" in r.ci and "empirical-Bernstein" not in r.ci   # 1 family x 3 steps
    d = err - rw                           # by hand: one-sided t on the paired difference
    q = stats.t.ppf(1 - 0.01 / 3, 63)
    lcb = d.mean(-1) - q * d.std(-1, ddof=1) / 8 + rw.mean(-1)
    assert np.isclose(r.lcb_ratio, np.max(lcb / rw.mean(-1)), rtol=1e-9)


def test_affine_r_w_bound_at_the_measured_r_w_with_few_seeds():
    """8 seeds, r_w identical across seeds (sigma = 0): the empirical-Bernstein UCB sits at the cap
    2 eta, while the paired check evaluates B at the measured r_w: Q = 0.9 L r_w is 'holds
    confidently' with ratio 0.9, and Q = 1.1 L r_w is violated."""
    rw = np.tile(np.array([[0.2], [0.5], [1.0]]), (1, 8))   # eta = 1: cap 2
    _, _, hi = empirical_bernstein(rw, 2.0, 0.01, 6)
    assert np.allclose(hi, 2.0)                           # the UCB is uninformative at 8 seeds
    ok = check_bound(_bound(L * r_w), _fake(0.9 * rw, rw))
    bad = check_bound(_bound(L * r_w), _fake(1.1 * rw, rw))
    assert ok.verdict == "holds confidently" and np.isclose(ok.tightness, 0.9)
    assert bad.verdict == "violated" and np.isclose(bad.tightness, 1.1)


def test_non_affine_r_w_bound_keeps_empirical_bernstein():
    rng = np.random.default_rng(1)
    err = rng.normal(1.0, 0.02, (3, 64))
    rw = rng.uniform(0.0, 2.0, (3, 64))
    r = check_bound(_bound(L * r_w ** 2 / 2 + L / 2), _fake(err, rw))
    assert "6 tests" in r.ci and "empirical-Bernstein" in r.ci   # 2 families x 3 steps


@pytest.mark.parametrize("dist", ["lognormal(1)", "exponential"])
@pytest.mark.parametrize("R", [8, 64])
def test_coverage_on_skewed_data(dist, R):
    c = coverage(dist, R, alpha=0.01, reps=3000, seed=2)
    assert c["t_lcb"] >= 0.985                  # 'violated' keeps its level (conservative)
    if R == 8:
        assert c["t_ucb"] < 0.97                # 'holds confidently' is approximate: measured loss


@pytest.mark.parametrize("dist", ["beta(0.5,5)", "bernoulli(0.05)"])
def test_empirical_bernstein_keeps_its_level(dist):
    for R in (8, 32):
        c = coverage(dist, R, alpha=0.01, reps=3000, seed=3)
        assert c["eb_lcb"] >= 0.99 and c["eb_ucb"] >= 0.99
        if dist == "bernoulli(0.05)" and R == 8:
            assert c["t_ucb"] < 0.9


@pytest.mark.parametrize("name", ["paper_c1_y", "paper_c2_y", "paper_c1_x", "paper_c2_x"])
def test_paper_readings_not_violated_on_delayed_runs(name):
    b = get(name)
    probs = [random_quadratic(4, 4, Spectral(), torch.Generator().manual_seed(0)),
             vector_quadratic(torch.ones((1, 1)), Sign(), x0=torch.full((1, 1), 100.0), name="line")]
    for p in probs:
        for sig in (0.0, 0.5):
            res = run(p, Gaussian(sig), "delayed", 0.1, 0.1, 60, 16)
            c = check_bound(b, res)
            assert not c.violated and c.tightness <= 1 + 1e-9, (p.name, sig, c)


def test_noise_term_alone_is_labelled_and_caught_as_a_whole_error_bound():
    assert "not a bound by itself" in report.label("paper_delayed_noise_consistent")
    assert report.label("paper_c2_y") == "paper_c2_y (reading C2)"
    line = vector_quadratic(torch.ones((1, 1)), Sign(), x0=torch.full((1, 1), 100.0), name="line")
    res = run(line, Gaussian(0.0), "delayed", 0.1, 0.1, 120, 2)
    assert check_bound(get("paper_delayed_noise_consistent"), res).violated
    assert not check_bound(get("paper_c2_y"), res).violated


def test_search_does_not_falsify_c2():
    r = search(get("paper_c2_y"), Instance(kind="vector", geometry="sign", noise="gaussian"),
               n_random=4, n_local=0, seeds=4, steps=30, confirm_seeds=8)
    assert not r["violated"] and r["confirmed_ratio"] <= 1


def test_cli_refuses_unwritable_out_before_monte_carlo(tmp_path, capsys, monkeypatch):
    from verify.__main__ import main
    monkeypatch.setattr("verify.__main__.run_report", lambda **kw: pytest.fail("Monte Carlo started"))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(SystemExit) as e:
        main(["--quick", "--out", str(blocker / "sub")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "not a writable directory" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0 and "(default: None)" in capsys.readouterr().out


def test_progress_per_unit(monkeypatch):
    p = vector_quadratic(torch.eye(2, dtype=torch.float64), Sign(), x0=torch.full((1, 2), 3.0), name="tiny")
    monkeypatch.setattr(report, "problems", lambda: [p])
    monkeypatch.setattr(report, "search_bases", lambda b, budget, **kw: dict(
        bound=b.name, search_ratio=0.5, confirmed_ratio=0.5, violated=False, instance="stub"))
    lines = []
    out = report.run_report(quick=True, progress=lines.append)
    text = "\n".join(lines)
    assert "[1/2] tiny" in text and "[2/2] tiny" in text          # problem x noise units
    assert "[1/9] paper_c1_y" in text and "[9/9]" in text          # one line per searched bound
    assert {c["verdict"] for c in out["checks"]} <= {"violated", "not violated", "holds confidently"}
    rows = {(r["bound"], r["variant"]): r for r in report.summary(out)}
    assert rows[("paper_c2_y", "delayed")]["state"] != "violated"
    assert "not a bound by itself" in report.markdown(out)


def test_bound_with_unknown_symbols_is_refused():
    with pytest.raises(ValueError, match="unknown symbols"):
        _bound(sp.Symbol("nope"))
