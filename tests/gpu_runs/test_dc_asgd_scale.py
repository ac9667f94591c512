"""gpu_runs.dc_asgd_scale: the size of DC-ASGD's correction against the gradient."""
from __future__ import annotations

import pytest
import torch

from gpu_runs.dc_asgd_scale import main, measure, relative_correction
from gpu_runs.recipe import TrainConfig


def test_relative_correction_matches_its_formula():
    gen = torch.Generator().manual_seed(0)
    g = {"a": torch.randn(4, 3, generator=gen), "b": torch.randn(5, generator=gen)}
    off = {"a": torch.randn(4, 3, generator=gen) * 1e-3, "b": None}   # b: tau = 0, y = x
    flat = lambda t: torch.cat([v.double().flatten() for v in t])
    want = 7.0 * torch.linalg.vector_norm(flat([g["a"] * g["a"] * off["a"]])) / torch.linalg.vector_norm(flat(g.values()))
    assert relative_correction(g, off, 7.0) == pytest.approx(float(want), rel=1e-5)
    assert relative_correction(g, {"a": torch.zeros(4, 3), "b": None}, 7.0) == 0.0


def test_measure_is_linear_in_lambda_and_zero_before_the_first_update():
    cfg = TrainConfig(config="tiny", optimizer="adamw", batch_size=2, seq_len=16, steps=20)
    rows = measure(cfg, [1, 3], [1.0, 100.0], say=lambda s: None)
    assert [(r["step"], r["lam"]) for r in rows] == [(1, 1.0), (1, 100.0), (3, 1.0), (3, 100.0)]
    assert rows[0]["rho"] == rows[1]["rho"] == 0.0          # y_0 = x_0: nothing pending yet
    assert rows[3]["rho"] == pytest.approx(100 * rows[2]["rho"], rel=1e-4) and rows[2]["rho"] > 0


@pytest.mark.parametrize("argv", [["--at", "0"], ["--lambdas", "-1"], ["--at", "x"], ["--optimizer", "nope"]])
def test_bad_input_is_refused(argv):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
