"""A pipedream run resumed from its checkpoint (the stale-point history included) continues the
uninterrupted run exactly; the checkpoint keeps the history layout {"k/i": x} (lmo.pipedream)."""
import re
import shutil

import torch

from gpu_runs.model import Llama
from gpu_runs.recipe import make_history, model_config
from gpu_runs.recipe import TrainConfig
from gpu_runs.train import train

FAST = dict(config="tiny", optimizer="adamw", mode="pipedream", stages=2, steps=8, batch_size=4, seq_len=16,
            eval_every=0, eval_batches=1, log_every=1, ckpt_every=3, device="cpu")


def test_pipedream_resume_continues_the_run_and_keeps_the_history_layout(tmp_path):
    whole = train(TrainConfig(out=str(tmp_path / "whole"), **FAST), progress=False)
    ck = torch.load(tmp_path / "whole" / "ckpt.pt", weights_only=True)      # written at step 6
    assert int(ck["step"]) == 6
    cfg = TrainConfig(**FAST)
    _, delays = make_history(cfg, Llama(model_config(cfg, 256)), {})
    assert set(delays.values()) == {0, 1}
    want = sorted(f"{k}/{i}" for k, tau in delays.items() for i in range(tau))   # full after 6 > 1 steps
    assert sorted(ck["history"]) == want and all(re.fullmatch(r".+/\d+", k) for k in ck["history"])
    # resume from the step-6 checkpoint: steps 7 and 8 must be the uninterrupted run's
    shutil.copytree(tmp_path / "whole", tmp_path / "resumed")
    res = train(TrainConfig(out=str(tmp_path / "resumed"), resume=True, **FAST), progress=False)
    key = lambda r: (r["step"], r["train_loss"])  # noqa: E731
    assert [key(r) for r in res.log] == [key(r) for r in whole.log]
    assert all(torch.equal(res.params[k], whole.params[k]) for k in whole.params)
