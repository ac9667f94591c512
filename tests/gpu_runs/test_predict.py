"""predict: reads a diagnosed run, evaluates the theory bound at the measured constants, prints a table."""
import math

from gpu_runs.predict import main, predict_run
from gpu_runs.train import TrainConfig, train


def test_predict_on_short_runs(tmp_path, capsys):
    kw = dict(config="tiny", optimizer="muon", steps=4, batch_size=4, seq_len=16, eval_every=4, eval_batches=1,
              diag_every=2)
    train(TrainConfig(out=str(tmp_path / "s"), **kw), progress=False)
    train(TrainConfig(out=str(tmp_path / "d"), mode="2bw", **kw), progress=False)
    res = predict_run(tmp_path / "d")
    assert res["variant"] == "2bw" and res["rows"]
    assert all(math.isfinite(r["bound"]) and r["bound"] > 0 for r in res["rows"])
    assert main([str(tmp_path / "s"), str(tmp_path / "d"), "--png", str(tmp_path / "p.png")]) == 0
    out = capsys.readouterr().out
    assert "muon: val-loss gap vs sync 2bw" in out and (tmp_path / "p.png").stat().st_size > 0
