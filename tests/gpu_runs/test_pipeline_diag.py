"""--diag-every in the real pipeline: the theory's quantities measured from per-stage
snapshots equal the single-process trainer's diagnostics on the same trajectory
(gpipe == sync, 2bw == 2bw, 2bw --ef == 2bw + EF), and gpu_runs.predict reads the run."""
import math
from pathlib import Path

import pytest

from gpu_runs.pipeline import build_parser, validate_args
from test_pipeline_llama import STEPS, corpus_dir, pipeline_log, trainer_log  # noqa: F401
from test_pipeline_mitigations import argv_of

EVERY = 3   # diagnosed t + 1 = 1, 3, 6
REL = 1e-4    # measured agreement: within 1e-5 on this config


def flat(d, prefix=""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from flat(v, prefix + k + "/")
        else:
            yield prefix + k, v


def assert_diagnostics_equal(want: list, got: list) -> dict:
    """The logs' diagnostics records agree at steps 1, 3, 6 (rel REL); returns got's by step."""
    w = {r["step"]: r["diagnostics"] for r in want if "diagnostics" in r}
    g = {r["step"]: r["diagnostics"] for r in got if "diagnostics" in r}
    assert sorted(w) == sorted(g) == [1, 3, 6]
    for step in w:
        fw, fg = dict(flat(w[step])), dict(flat(g[step]))
        assert set(fw) == set(fg), step
        for k, v in fw.items():
            if isinstance(v, float) and math.isnan(v):
                assert math.isnan(fg[k]), (step, k)
            else:
                assert fg[k] == pytest.approx(v, rel=REL, abs=1e-6), (step, k, fg[k], v)
    return g


@pytest.mark.parametrize("schedule,mode,kw", [("gpipe", "sync", {}), ("2bw", "2bw", {}), ("2bw", "2bw", dict(ef=True)),
                                              ("2bw", "2bw", dict(tau=2)),
                                              ("2bw", "2bw", dict(corrector="weight_prediction"))],
                         ids=["gpipe", "2bw", "2bw-ef", "2bw-tau2", "2bw-weight-prediction"])
def test_pipeline_diagnostics_equal_the_trainers(schedule, mode, kw, corpus_dir, tmp_path):  # noqa: F811
    want, _ = trainer_log(mode, corpus_dir, tmp_path / "train", diag_every=EVERY, **kw)
    got, _ = pipeline_log(schedule, corpus_dir, tmp_path / "pipe", extra=["--diag-every", str(EVERY), *argv_of(kw)])
    g = assert_diagnostics_equal(want, got)
    if mode == "2bw" and not kw:   # not vacuous: plain 2bw's r_t = ||x_t - y_t|| is its pending step
        assert g[3]["r"] > 0 and g[3]["r_over_d"] == pytest.approx(1.0, rel=1e-4)
    if kw.get("tau") == 2:   # r_t = ||d_{t-1} + d_{t-2}||: two pending steps, more than one
        assert g[3]["r"] > 0 and g[3]["r_over_d"] > 1.0
    assert not (tmp_path / "pipe" / "diag").exists()   # snapshots removed after the measurement

    from gpu_runs.predict import summarize
    s = summarize(Path(tmp_path / "pipe"))
    assert s["variant"] == ("ef" if kw.get("ef") else mode) and s["consts"] is not None and len(s["rows"]) == 3


@pytest.mark.parametrize("argv,msg", [
    (["--schedule", "pipedream", "--diag-every", "2", "--out", "x"], "not for pipedream"),
    (["--schedule", "1f1b", "--model", "toy", "--optimizer", "sgd", "--diag-every", "2", "--out", "x"], "--model llama"),
    (["--schedule", "1f1b", "--diag-every", "2"], "needs --out"),
    (["--schedule", "1f1b", "--diag-every", "2", "--out", "x", "--diag-micro", "1"], "--diag-micro"),
])
def test_bad_diag_settings_are_refused_before_any_process_group(argv, msg):
    args = build_parser().parse_args(argv)
    with pytest.raises(ValueError, match=msg):
        validate_args(args, 2, 4)
