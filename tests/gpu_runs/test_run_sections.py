"""The run spec in sections (gpu_runs.sections): every field of TrainConfig lives in exactly one
section, every option's help is the docstring written below its field (no separate help
table), and both command lines are generated from those fields."""
from __future__ import annotations

import dataclasses

import pytest

from gpu_runs.cli import option_fields, option_help
from gpu_runs.delay_fields import DelayFields
from gpu_runs.field_docs import field_docs
from gpu_runs.pipeline.args import SHARED, build_parser
from gpu_runs.recipe import NOT_OPTIONS, TrainConfig
from gpu_runs.sections import SECTIONS, OptimizerSection, ScheduleSection


def _options(parser) -> dict:
    return {a.dest: a for a in parser._actions if a.option_strings and a.dest != "help"}


def test_every_field_in_exactly_one_section():
    owners = {}
    for name, cls in SECTIONS.items():
        for f in dataclasses.fields(cls):
            assert f.name not in owners, (f.name, owners.get(f.name), name)
            owners[f.name] = name
    assert set(owners) == {f.name for f in dataclasses.fields(TrainConfig)}
    assert list(SECTIONS) == ["model", "data", "optimizer", "schedule", "delay", "evaluation", "checkpoint",
                              "parallel"]


def test_every_option_has_its_fields_docstring():
    for name in option_fields():
        doc = option_help(name)
        assert doc and len(doc) > 8, name
    docs = {}
    for cls in (*SECTIONS.values(), DelayFields):
        docs.update(field_docs(cls))
    assert set(docs) == set(option_fields()) | {"delay"}, set(docs) ^ set(option_fields())


def test_the_docstring_is_read_from_the_source():
    """field_docs reads the string below a field, and only that: a field without one is absent."""

    @dataclasses.dataclass
    class Planted:
        a: int = 1
        """the first"""
        b: int = 2
        c: int = 3
        """the
        third"""

    assert field_docs(Planted) == {"a": "the first", "c": "the third"}


def test_both_command_lines_are_generated_from_the_fields():
    from gpu_runs.train import parse_args
    import argparse
    from gpu_runs.cli import add_config_options
    p = argparse.ArgumentParser()
    names = add_config_options(p)
    assert names == [n for n in option_fields() if n not in NOT_OPTIONS]
    for n, a in _options(p).items():
        assert a.help == option_help(n) and a.default == option_fields()[n].default, n
    pipe = _options(build_parser())
    for n in SHARED:
        a = pipe["clip" if n == "grad_clip" else n]
        assert a.default == option_fields()[n].default, n
    assert parse_args([]) == TrainConfig()


def test_a_section_as_its_own_value():
    cfg = TrainConfig(steps=7, warmup_frac=0.2, lr=3e-4)
    assert cfg.section("schedule") == ScheduleSection(steps=7, warmup_frac=0.2, final_frac=0.1)
    assert cfg.section("optimizer").lr == 3e-4 and isinstance(cfg.section("optimizer"), OptimizerSection)
    with pytest.raises(KeyError):
        cfg.section("nope")


def test_help_lists_each_option_under_its_section():
    from gpu_runs.cli import section_of
    text = build_parser().format_help()
    for section in ("optimizer (the run spec's section)", "delay (the run spec's section)"):
        assert section in text
    assert section_of("lr") == "optimizer" and section_of("ef") == "delay" and section_of("stages") == "delay"
    assert section_of("ckpt_every") == "checkpoint" and section_of("diag_every") == "evaluation"
    with pytest.raises(KeyError):
        section_of("no_such_option")
