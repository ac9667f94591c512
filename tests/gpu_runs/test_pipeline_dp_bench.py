"""The benchmark's dp column (--setting dp): plain data, and its table."""
import pytest

from gpu_runs.pipeline.bench import format_dp_table, run_dp_bench


def test_format_dp_table_relative_throughput():
    rows = [dict(schedule="2bw", P=2, M=4, dp=d, step_time_s=s, tokens_per_s=t, allreduce_share=a)
            for d, s, t, a in [(1, 0.1, 100.0, 0.0), (2, 0.1, 200.0, 0.05), (4, 0.2, 200.0, 0.25)]]
    table = format_dp_table(dict(fwd_ms=10.0, bwd_ms=20.0, dim=256, rows=rows)).splitlines()
    assert "all-reduce share" in table[1]
    assert [line.split("|")[3].strip() for line in table[2:]] == ["1.00", "2.00", "2.00"]
    assert table[-1].split("|")[4].strip() == "25.0%"


@pytest.mark.slow
def test_run_dp_bench_returns_plain_data():
    res = run_dp_bench(quick=True)
    assert [(r["schedule"], r["dp"]) for r in res["rows"]] == [(s, d) for s in ("1f1b", "2bw") for d in (1, 2, 4)]
    for r in res["rows"]:
        assert r["step_time_s"] > 0 and 0 <= r["allreduce_share"] < 1
        assert (r["allreduce_share"] == 0) == (r["dp"] == 1)  # no averaging with one replica
