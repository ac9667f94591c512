"""NCCL matches point-to-point messages by issue order, not by tag, so a pipeline that is
right on gloo (tag matching) can deadlock or mix up tensors on GPUs. These tests check the
order rule on CPU: every rank logs its messages (``--comm-log``) and, on every
(channel, sender, receiver), the sends and the receives must agree one for one.

The planted check: the same logs with every kind put back on one channel (what the stages
did before :mod:`gpu_runs.pipeline.channels`) must be caught, so the test can fail."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_runs.pipeline.channels import (DIRECTIONS, TAG_ACT, TAG_EVAL, TAG_TIED_W,
                                        order_mismatches, shared_directions)
from gpu_runs.pipeline.launch import run_forked


@pytest.mark.parametrize("P", range(1, 9))
def test_no_two_kinds_share_a_direction_of_a_channel(P):
    assert shared_directions(P) == []


def test_sharing_a_direction_is_caught():
    evals_on_default = {**DIRECTIONS, TAG_EVAL: ("default", DIRECTIONS[TAG_EVAL][1])}
    assert ("default", 0, 1) in shared_directions(2, evals_on_default)
    tied_on_default = {**DIRECTIONS, TAG_TIED_W: ("default", DIRECTIONS[TAG_TIED_W][1])}
    assert shared_directions(2, tied_on_default) == [("default", 0, 1)]
    assert shared_directions(3, tied_on_default) == []  # 0 -> 2 is no activation's direction


def one_channel(logs):
    """The same messages, all on the default channel (the layout before the channels)."""
    return {r: [(op, peer, "default", tag, shape) for op, peer, _, tag, shape in msgs] for r, msgs in logs.items()}


def test_order_rule_on_hand_made_logs():
    ok = {0: [("send", 1, "default", TAG_ACT, [2, 3]), ("send", 1, "eval", TAG_EVAL, [1, 3])],
          1: [("recv", 0, "eval", TAG_EVAL, [1, 3]), ("recv", 0, "default", TAG_ACT, [2, 3])]}
    assert order_mismatches(ok) == []  # different channels: their relative order is free
    assert len(order_mismatches(one_channel(ok))) == 1
    lost = {0: ok[0], 1: ok[1][:1]}
    assert order_mismatches(lost) == [
        "channel default 0->1: message 0 sent as (0, (2, 3)), received as nothing (1 sent, 0 received)"]


def run_logged(P, out, argv):
    """A toy pipeline of P forked ranks with --comm-log; each rank's message log."""
    res = run_forked([*argv, "--model", "toy", "--toy-layers", "3", "--optimizer", "sgd", "--lr", "0.1",
                      "--out", str(out), "--quiet", "--timeout", "60", "--comm-log"], P, timeout=120)
    assert all(rc == 0 for rc, _ in res), [o[-2000:] for _, o in res]
    return {r: json.loads((out / f"comm_rank{r}.json").read_text()) for r in range(P)}


@pytest.mark.parametrize("schedule,P", [("1f1b", 2), ("2bw", 2), ("pipedream", 2), ("pipedream", 3)])
def test_real_runs_follow_the_order_rule(schedule, P, tmp_path):
    """Toy model with a tied head, evaluation every 2 steps: every kind of message flows."""
    logs = run_logged(P, tmp_path, ["--schedule", schedule, "--toy-tied", "--steps", "6", "--batch-size", "4",
                                    "--seq-len", "5", "--microbatches", "2", "--eval-every", "2", "--eval-batches", "2"])
    kinds = {m[3] for msgs in logs.values() for m in msgs}
    assert kinds == set(DIRECTIONS)  # activations, gradients, evaluations, tied weight and gradient
    assert order_mismatches(logs) == []
    # the planted check: on one channel these very runs break NCCL's order rule
    assert order_mismatches(one_channel(logs))


@settings(max_examples=6, deadline=None)
@given(schedule=st.sampled_from(["gpipe", "1f1b", "2bw", "pipedream"]), P=st.integers(2, 3),
       tied=st.booleans(), eval_every=st.integers(1, 3), steps=st.integers(3, 6), extra_mb=st.integers(0, 1),
       sync=st.integers(0, 2))
def test_random_pipelines_finish_and_follow_the_order_rule(schedule, P, tied, eval_every, steps, extra_mb, sync):
    """Any schedule, stage count, tied head, evaluation cadence (and 2bw's sync start /
    cooldown): every rank finishes, every step and evaluation is logged, NCCL's order rule holds."""
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory(prefix="channels_") as d:   # a fixture's tmp_path is one per test, not per example
        _random_pipeline(Path(d), schedule, P, tied, eval_every, steps, extra_mb, sync)


def _random_pipeline(out, schedule, P, tied, eval_every, steps, extra_mb, sync):
    M = P + extra_mb
    argv = ["--schedule", schedule, "--steps", str(steps), "--batch-size", str(2 * M), "--seq-len", "4",
            "--microbatches", str(M), "--eval-every", str(eval_every), "--eval-batches", "1"]
    argv += (["--toy-tied"] if tied else []) + (
        ["--sync-start", str(sync), "--sync-cooldown", str(sync - 1)] if schedule == "2bw" and sync else [])
    logs = run_logged(P, out, argv)
    log = [json.loads(line) for line in open(out / "log.jsonl")]
    assert [r["step"] for r in log] == list(range(1, steps + 1))
    evals = {r["step"] for r in log if "val_loss" in r}
    assert evals == {t + 1 for t in range(steps) if (t + 1) % eval_every == 0} | {steps}
    assert order_mismatches(logs) == []
