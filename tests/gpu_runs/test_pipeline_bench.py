"""The benchmark's plain-data result (slow: it launches 12 process groups)."""
import pytest

from gpu_runs.pipeline.bench import format_table, run_bench
from gpu_runs.pipeline.schedules import ideal_bubble_ratio


@pytest.mark.slow
def test_run_bench_returns_plain_data():
    res = run_bench(quick=True)
    assert res["setting"] == "synthetic"
    assert {(q["P"], q["M"]) for q in res["ratios"]} == {(2, 2), (2, 4), (4, 4), (4, 8)}
    for q in res["ratios"]:
        assert q["ideal"] == ideal_bubble_ratio(q["P"], q["M"])
        assert q["measured_1f1b"] > 0 and q["eff_1f1b"] == pytest.approx(q["measured_1f1b"] / q["ideal"])
    assert len(res["rows"]) == 12 and all(r["step_time_s"] > 0 for r in res["rows"])
    assert "ideal" in format_table(res)
