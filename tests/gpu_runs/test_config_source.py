"""One config source: every option of train, pipeline and sweep that is a TrainConfig field
has the field's default (sweep's declared scale aside), and a parsed trainer command line
is the TrainConfig of the same keywords."""
import argparse
import dataclasses

import pytest

from gpu_runs.cli import option_fields
from gpu_runs.pipeline.args import SHARED as PIPELINE_FIELDS, build_parser
from gpu_runs.recipe import TrainConfig
from gpu_runs.sweep import SHARED as SWEEP_FIELDS, SWEEP_SCALE
from gpu_runs.train import parse_args

#: every run-spec option's field (the stored delay spelled as its flat fields: mode, ef, ...)
FIELDS = option_fields()


def _defaults(parser):
    return {a.dest: a.default for a in parser._actions if a.dest != "help"}


def test_trainer_defaults_are_the_fields():
    cfg = parse_args([])
    assert dataclasses.asdict(cfg) == dataclasses.asdict(TrainConfig())


def test_pipeline_defaults_are_the_fields():
    d = _defaults(build_parser())
    for n in PIPELINE_FIELDS:
        assert d["clip" if n == "grad_clip" else n] == FIELDS[n].default, n
    # the three divergences of the issue are gone
    assert (d["device"], d["weight_decay"], d["data"]) == (TrainConfig.device, TrainConfig.weight_decay, TrainConfig.data)


def test_sweep_defaults_are_the_fields_but_its_declared_scale():
    from gpu_runs.cli import add_config_options
    p = argparse.ArgumentParser()
    add_config_options(p, SWEEP_FIELDS, defaults=SWEEP_SCALE)
    d = _defaults(p)
    for n in SWEEP_FIELDS:
        assert d[n] == SWEEP_SCALE.get(n, FIELDS[n].default), n
    assert set(SWEEP_SCALE) <= set(SWEEP_FIELDS)


@pytest.mark.parametrize("argv, kw", [(["--delay", "2bw", "--ef"], dict(mode="2bw", ef=True)),
                                      (["--mode", "pipedream", "--stages", "3"], dict(mode="pipedream", stages=3)),
                                      (["--grad-clip", "0", "--warmup-frac", "0.2"], dict(grad_clip=0.0, warmup_frac=0.2))])
def test_command_line_is_the_config(argv, kw):
    assert parse_args(argv) == TrainConfig(**kw)
