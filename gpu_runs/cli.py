"""What every gpu_runs command line shares: defaults shown in ``--help`` for every option.

``ArgumentDefaultsHelpFormatter`` adds ``(default: X)`` only to options that have a help
text; :func:`show_defaults` gives the others their option name as help, so no default is
hidden.
"""
from __future__ import annotations

import argparse

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
