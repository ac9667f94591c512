"""What every gpu_runs command line shares: options generated from the TrainConfig fields
(one config source: the defaults of train, pipeline and sweep cannot diverge), and
defaults shown in ``--help`` for every option.

``ArgumentDefaultsHelpFormatter`` adds ``(default: X)`` only to options that have a help
text; :func:`show_defaults` gives the others their option name as help, so no default is
hidden.
"""
from __future__ import annotations

import argparse
import dataclasses

from gpu_runs.delay_fields import DelayFields
from gpu_runs.field_docs import field_docs
from gpu_runs.recipe import NOT_OPTIONS, TrainConfig
from gpu_runs.sections import DOCUMENTED, SECTIONS

Formatter = argparse.ArgumentDefaultsHelpFormatter


def show_defaults(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Every option of ``parser`` (and of its sub-commands) gets a help line with its default."""
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sub in a.choices.values():
                show_defaults(sub)
        elif a.help is None and a.option_strings:
            a.help = a.dest.replace("_", " ")
    return parser


_TYPES = {"str": str, "int": int, "float": float}


def _type_of(annotation: str):
    """``int``, ``float | None`` ... -> the argparse type (the part before ``| None``)."""
    return _TYPES[str(annotation).split("|")[0].strip()]


def option_fields() -> dict:
    """``{name: dataclasses.Field}`` of every run-spec option, in the order of the run's JSON:
    TrainConfig's fields, with the stored delay (``TrainConfig.delay``) spelled as its flat
    fields (``gpu_runs.delay_fields.DelayFields``: --mode/--delay, --ef, --sync-start, ...)."""
    out = {}
    for f in dataclasses.fields(TrainConfig):
        if f.name == "delay":
            out.update({d.name: d for d in dataclasses.fields(DelayFields)})
        else:
            out[f.name] = f
    return out


def option_help(name: str) -> str:
    """The help text of a run-spec option: its field's docstring in its section
    (``gpu_runs.sections``; the delay's flat fields: ``gpu_runs.delay_fields.DelayFields``)."""
    for cls in DOCUMENTED:
        doc = field_docs(cls).get(name)
        if doc:
            return doc
    raise KeyError(f"the run-spec field {name!r} has no docstring in gpu_runs.sections")


def section_of(name: str) -> str:
    """The section (``gpu_runs.sections.SECTIONS``) a run-spec option belongs to; the delay's
    flat fields are the delay's."""
    if name in {f.name for f in dataclasses.fields(DelayFields)}:
        return "delay"
    for section, cls in SECTIONS.items():
        if name in {f.name for f in dataclasses.fields(cls)}:
            return section
    raise KeyError(f"{name!r} is in no section of the run spec (gpu_runs.sections)")


def add_config_options(parser: argparse.ArgumentParser, names=None, *, defaults=None, flags=None,
                       dests=None, choices=None, helps=None) -> list[str]:
    """One option per TrainConfig field in ``names`` (default: all but ``recipe.NOT_OPTIONS``:
    opt_kwargs, and the parallelism section, whose options are the pipeline's own), with the
    field's default (``defaults`` overrides a command's scale, e.g. sweep's steps), type and
    help (:func:`option_help`), listed in ``--help`` under its section (:func:`section_of`).
    ``flags`` / ``dests`` rename an option; returns the field names."""
    defaults, flags, dests = defaults or {}, flags or {}, dests or {}
    choices, helps = choices or {}, helps or {}
    fields = option_fields()
    names = [n for n in fields if n not in NOT_OPTIONS] if names is None else list(names)
    groups = {}
    for n in names:
        f, section = fields[n], section_of(n)
        if section not in groups:
            groups[section] = parser.add_argument_group(
                f"{section} (the run spec's section)", SECTIONS[section].__doc__.split("\n\n")[0])
        group = groups[section]
        default = defaults.get(n, f.default)
        kw = dict(default=default, help=helps.get(n) or option_help(n), dest=dests.get(n, n))
        opts = flags.get(n, ("--" + n.replace("_", "-"),))
        if str(f.type) == "bool":
            group.add_argument(*opts, action="store_true", **kw)
        else:
            group.add_argument(*opts, type=_type_of(f.type), choices=choices.get(n), **kw)
    return names
