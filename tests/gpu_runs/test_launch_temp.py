"""The pipeline launcher leaves nothing in the system temp directory (issue 39, item 7): a
launch that finished removes its ``pipeline_*`` folder of rank logs; one with a failed rank
keeps it and says where. (tests/conftest.py checks that the whole session leaves nothing.)"""
import os
import re
import shutil
import tempfile

from conftest import left_in

from gpu_runs.pipeline.launch import run_forked

TOY = ["--model", "toy", "--optimizer", "sgd", "--toy-layers", "2", "--schedule", "1f1b", "--steps", "2",
       "--batch-size", "4", "--seq-len", "8", "--eval-every", "0", "--quiet", "--timeout", "30"]


def test_a_finished_launch_leaves_nothing():
    before = left_in(tempfile.gettempdir())
    res = run_forked(TOY, 2, timeout=60)
    assert all(rc == 0 for rc, _ in res), [o[-1000:] for _, o in res]
    assert left_in(tempfile.gettempdir()) == before


def test_a_failed_launch_keeps_its_rank_logs_and_says_where(capsys):
    before = left_in(tempfile.gettempdir())
    res = run_forked([*TOY, "--fault", "1:1:raise"], 2, timeout=60)
    assert res[1][0] not in (0, None)
    err = capsys.readouterr().err
    kept = re.search(r"a rank failed: its logs are kept in (\S+)", err)
    assert kept, err
    where = kept.group(1)
    try:
        assert [n for n in left_in(tempfile.gettempdir()) if n not in before] == [os.path.basename(where)]
        assert "injected fault" in open(os.path.join(where, "rank1.out")).read()
    finally:
        shutil.rmtree(where)
