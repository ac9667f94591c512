"""The pipeline's synchronous schedules (gpipe, 1f1b) give the same losses as
torch.distributed.pipelining's ScheduleGPipe / Schedule1F1B on the tiny model over gloo:
same x_0, batches, microbatching, clipping and lmo optimizer (gpu_runs.torch_pipelining_ref).
Both are exact-gradient schedules of the same fp32 computation, so the losses agree to
fp32 rounding (measured: bit-identical on CPU)."""
import pytest

from gpu_runs.torch_pipelining_ref import build_parser, compare

pytest.importorskip("torch.distributed.pipelining", reason="torch without torch.distributed.pipelining")


def _args(*extra):
    return build_parser().parse_args(["--steps", "3", "--batch-size", "4", "--seq-len", "16", *extra])


def test_1f1b_matches_torch_schedule1f1b():
    res = compare(_args("--schedules", "1f1b"), fork=True)["1f1b"]
    assert len(res["ours"]["loss"]) == len(res["torch"]["loss"]) == 3
    assert res["max_abs_diff"] < 1e-5, res


@pytest.mark.slow
@pytest.mark.parametrize("optimizer", ["adamw", "muon"])
def test_gpipe_and_1f1b_match_torch_with_more_steps(optimizer):
    res = compare(build_parser().parse_args(["--steps", "6", "-M", "4", "--optimizer", optimizer,
                                             "--lr", "0.01"]), fork=True)
    for s in ("gpipe", "1f1b"):
        assert res[s]["max_abs_diff"] < 1e-5, (s, res[s])
