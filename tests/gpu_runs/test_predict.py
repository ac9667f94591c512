"""predict: reads diagnosed runs, evaluates the theory bound at the measured constants, tests the orderings."""
import json
import math

import pytest

from gpu_runs.predict import main, predict_run, summarize
from gpu_runs.recipe import TrainConfig
from gpu_runs.train import train

KW = dict(config="tiny", optimizer="muon", steps=4, batch_size=4, seq_len=16, eval_every=4, eval_batches=1,
          diag_every=2)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("predict")
    for name, kw in (("s", {}), ("d", dict(mode="2bw")), ("e", dict(mode="2bw", ef=True)),
                     ("s2", dict(lr=0.04)), ("d2", dict(lr=0.04, mode="2bw"))):
        train(TrainConfig(out=str(root / name), **KW, **kw), progress=False)
    return root


def test_bound_rows_use_the_step_norm(runs):
    res = predict_run(runs / "d")
    assert res["variant"] == "2bw" and res["rows"]
    assert all(math.isfinite(r["bound"]) and r["bound"] > 0 for r in res["rows"])
    # eta = ||d_t|| by default: under 2bw r = ||d_t||, so r / eta is 1 (after the fill step)
    assert all(r["r_over_eta"] == pytest.approx(1.0, rel=1e-5) for r in res["rows"] if r["step"] > 1)
    lr_rows = predict_run(runs / "d", eta="lr")["rows"]
    assert any(abs(a["bound"] - b["bound"]) > 1e-9 for a, b in zip(res["rows"], lr_rows))


def test_summary_constants(runs):
    s = summarize(runs / "s2")
    assert s["lr"] == 0.04 and s["beta"] == pytest.approx(0.95) and s["consts"]["K"] == 4
    assert s["consts"]["Delta_0"] == json.loads((runs / "s2" / "log.jsonl").read_text().splitlines()[0])["train_loss"]


def test_cli_tables_json_png(runs, tmp_path, capsys):
    dirs = [str(runs / n) for n in ("s", "d", "e", "s2", "d2")]
    assert main(dirs + ["--png", str(tmp_path / "p.png"), "--json", str(tmp_path / "p.json"),
                        "--markdown", str(tmp_path / "p.md")]) == 0
    out = capsys.readouterr().out
    assert "ordering 1: the delay penalty grows with lr" in out and (tmp_path / "p.png").stat().st_size > 0
    blob = json.loads((tmp_path / "p.json").read_text())
    assert len(blob["cells"]) == 2 and len(blob["lr_orderings"]) == 1 and len(blob["ef_orderings"]) == 1
    o = blob["lr_orderings"][0]
    assert o["xs"] == [0.02, 0.04] and o["predicted_holds"]   # 2 L eta with one L grows with eta
    assert o["holds"] == (o["gaps"][1] > o["gaps"][0])
    assert "ordering 3" in (tmp_path / "p.md").read_text()
    assert "no cell was run with two or more seeds" in out and blob["replicates"] == []
    assert o["noise_sd"] is None and o["resolved_pairs"] is None   # no noise estimate is made up


def test_cli_refuses_a_non_run_directory(tmp_path):
    with pytest.raises(SystemExit):
        main([str(tmp_path)])
