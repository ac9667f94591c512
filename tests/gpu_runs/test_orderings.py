"""orderings: cells, concordance, the predicted prices 2 L eta and 2 L r_avg, on hand-made run summaries."""
import pytest

from gpu_runs.orderings import cells, concordance, ef_orderings, format_report, sweep_orderings


def run(opt, lr, beta, variant, val, L=3.0, eta=None, r_mean=0.0):
    consts = dict(L=L, sigma=0.5, rho=2.0, eta=lr if eta is None else eta, mu=1 - beta, K=100, Delta_0=5.0)
    return dict(optimizer=opt, lr=lr, beta=beta, variant=variant, final_val=val, rest=(("steps", "100"),),
                consts=consts, r_mean=r_mean)


def test_concordance_counts_pairs():
    assert concordance([(1, 0.1), (2, 0.2), (3, 0.3)], increasing=True) == (3, 3)
    assert concordance([(1, 0.1), (2, 0.3), (3, 0.2)], increasing=True) == (2, 3)
    assert concordance([(1, 0.3), (2, 0.2)], increasing=False) == (1, 1)
    assert concordance([(1, 0.2), (2, 0.2)], increasing=True) == (0, 1)   # a tie does not confirm


def test_predicted_prices_are_2_L_eta_and_2_L_r():
    rs = [run("muon", 0.02, 0.95, "sync", 3.0), run("muon", 0.02, 0.95, "2bw", 3.1),
          run("muon", 0.02, 0.95, "ef", 3.05, r_mean=0.01)]
    (c,) = cells(rs)
    assert c["gap_2bw"] == pytest.approx(0.1) and c["gap_ef"] == pytest.approx(0.05)
    assert c["pi_2bw"] == pytest.approx(2 * 3.0 * 0.02)
    assert c["pi_ef"] == pytest.approx(2 * 3.0 * 0.01)
    assert c["r_over_eta_ef"] == pytest.approx(0.5)
    (o,) = ef_orderings([c])
    assert o["predicted_helps"] and o["measured_helps"] and o["agree"]


def test_a_planted_violation_of_each_ordering_is_reported():
    rs = []
    for lr, gap in ((0.01, 0.2), (0.02, 0.1)):                 # the gap shrinks with lr: ordering 1 fails
        rs += [run("adamw", lr, 0.9, "sync", 3.0), run("adamw", lr, 0.9, "2bw", 3.0 + gap)]
    for beta, gap in ((0.8, 0.05), (0.95, 0.3)):                # the gap grows with beta at lr 0.01: fails
        rs += [run("adamw", 0.01, beta, "sync", 3.0), run("adamw", 0.01, beta, "2bw", 3.0 + gap)]
    rs += [run("adamw", 0.01, 0.9, "ef", 3.5, r_mean=0.005)]    # r/eta = 0.5 but EF hurts: disagreement
    cs = cells(rs)
    (lr_o,) = sweep_orderings(cs, "lr")
    assert not lr_o["holds"] and lr_o["predicted_holds"] and lr_o["measured_pairs"] == (0, 1)
    beta_o = [o for o in sweep_orderings(cs, "beta") if o["fixed"] == {"lr": 0.01}]
    assert len(beta_o) == 1 and beta_o[0]["xs"] == [0.8, 0.9, 0.95] and not beta_o[0]["holds"]
    (e,) = ef_orderings(cs)
    assert e["predicted_helps"] and not e["measured_helps"] and not e["agree"]
    text = format_report(cs, [lr_o], beta_o, [e])
    assert "| NO |" in text and "agreement: 0/1 cells" in text


def test_relative_price_shrinks_with_momentum_and_one_L_is_used():
    rs = []
    for beta, L in ((0.8, 1.0), (0.95, 9.0)):
        rs += [run("muon", 0.02, beta, "sync", 3.0, L=L), run("muon", 0.02, beta, "2bw", 3.01)]
    (o,) = sweep_orderings(cells(rs), "beta")
    assert o["predicted_holds"]   # 2 L eta / B_sync falls as beta -> 1 once L is the same in both cells
    assert o["predicted"][0] > o["predicted"][1]


def test_cells_need_a_sync_run_and_equal_settings():
    a = run("muon", 0.02, 0.95, "2bw", 3.1)
    b = dict(run("muon", 0.02, 0.95, "sync", 3.0), rest=(("steps", "200"),))
    assert cells([a, b]) == []
