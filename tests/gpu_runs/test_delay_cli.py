"""Both command lines take --delay {sync,2bw,ef,pipedream} (issue 40 item 1): the trainer's
--delay ef is --delay 2bw --ef; the pipeline's --delay picks its schedule (ef: 2bw) and
refuses, in one line naming both flags, a --schedule that does not run it; --schedule alone
and --ef work as before."""
import pytest

from gpu_runs.parallelism import Parallelism
from gpu_runs.pipeline import build_parser, main, run_spec
from gpu_runs.pipeline.args import delay_and_schedule
from gpu_runs.recipe import TrainConfig
from gpu_runs.train import parse_args

SMALL = ["--steps", "4", "--batch-size", "4", "--seq-len", "16"]


def test_trainer_delay_ef_is_2bw_with_ef():
    assert parse_args(["--delay", "ef"]) == parse_args(["--delay", "2bw", "--ef"]) == TrainConfig(mode="2bw", ef=True)
    assert parse_args(["--delay", "ef", "--ef"]) == TrainConfig(mode="2bw", ef=True)
    assert parse_args(["--delay", "ef"]).as_dict() == TrainConfig(mode="2bw", ef=True).as_dict()
    assert parse_args(["--delay", "ef"]).delay.kind == "ef"


def test_trainer_ef_with_another_delay_is_refused(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--delay", "sync", "--ef"])
    err = capsys.readouterr().err
    assert "ef" in err and "2bw" in err


def _pipe(*argv, P=2):
    return run_spec(build_parser().parse_args([*SMALL, *argv]), P)


@pytest.mark.parametrize("delay, schedule, mode, ef", [
    ("sync", "1f1b", "sync", False), ("2bw", "2bw", "2bw", False), ("ef", "2bw", "2bw", True),
    ("pipedream", "pipedream", "pipedream", False)])
def test_pipeline_delay_picks_its_schedule(delay, schedule, mode, ef):
    run = _pipe("--delay", delay)
    flat = run.as_dict()   # the run's JSON spells the delay as it did: mode, ef
    assert (flat["mode"], flat["ef"], run.parallel.schedule) == (mode, ef, schedule)
    assert run.delay.kind == delay


def test_pipeline_delay_ef_equals_schedule_2bw_ef_and_the_trainer():
    a, b, c = _pipe("--delay", "ef"), _pipe("--schedule", "2bw", "--ef"), _pipe("--delay", "ef", "--schedule", "2bw")
    assert a == b == c and a.parallel == Parallelism("2bw", 2, 1)
    assert _pipe("--delay", "2bw", "--ef") == a
    assert _pipe("--delay", "sync", "--schedule", "gpipe").parallel.schedule == "gpipe"


@pytest.mark.parametrize("delay, schedule", [("2bw", "1f1b"), ("ef", "gpipe"), ("sync", "2bw"),
                                             ("pipedream", "2bw"), ("2bw", "pipedream")])
def test_pipeline_schedule_that_does_not_run_the_delay_is_refused(delay, schedule):
    with pytest.raises(ValueError) as e:
        delay_and_schedule(build_parser().parse_args(["--delay", delay, "--schedule", schedule]))
    msg = str(e.value)
    assert "\n" not in msg and f"--schedule {schedule}" in msg and f"--delay {delay}" in msg, msg


def test_pipeline_refusal_is_one_line_before_any_process(capsys):
    assert main(["--delay", "2bw", "--schedule", "1f1b", *SMALL]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "refused" in err and "--delay 2bw" in err and "--schedule 1f1b" in err, err


def test_pipeline_needs_delay_or_schedule_and_ef_needs_2bw():
    with pytest.raises(ValueError, match="--delay.*--schedule"):
        delay_and_schedule(build_parser().parse_args(SMALL))
    for argv in (["--delay", "sync", "--ef"], ["--schedule", "1f1b", "--ef"], ["--delay", "pipedream", "--ef"]):
        with pytest.raises(ValueError, match="ef.*2bw"):
            delay_and_schedule(build_parser().parse_args(argv))
