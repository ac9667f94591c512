"""The delay is one value (lmo.variants.Delay): its kinds are declared once and its rules
checked once. Reads the source with ``ast`` / text, so a re-declaration anywhere in the
packages fails here: a tuple, list or set literal that spells two of the kinds (use the
names of lmo.variants instead), or the rules' messages in a second module."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("lmo", "theory", "verify", "gpu_runs", "paper_figs")
KINDS = {"sync", "2bw", "ef", "pipedream"}
#: the one declaration of the kinds, and theory's own spelling of its three (theory imports
#: nothing of ours; tests/lmo/test_variant_wrap.py keeps the two equal)
DECLARED = {"lmo/variants.py", "theory/records/bound.py"}
#: the messages of the delay's rules (lmo.variants.Delay and Delay.of_config)
RULES = ("mitigates the one-step delay", "error feedback corrects the one-step delay")


def _files():
    for pkg in PACKAGES:
        yield from sorted((ROOT / pkg).rglob("*.py"))


def kind_literals(tree: ast.AST) -> list[int]:
    """Line numbers of tuple / list / set literals with two or more of the kinds as strings."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            names = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            if len(names & KINDS) >= 2:
                out.append(node.lineno)
    return out


def test_the_kinds_are_declared_once():
    found = {}
    for f in _files():
        rel = f.relative_to(ROOT).as_posix()
        lines = kind_literals(ast.parse(f.read_text()))
        if lines:
            found[rel] = lines
    assert set(found) <= DECLARED and "lmo/variants.py" in found, found
    assert len(found["lmo/variants.py"]) == 1, found


def test_the_rules_are_checked_in_one_module():
    for rule in RULES:
        where = [f.relative_to(ROOT).as_posix() for f in _files() if rule in f.read_text()]
        assert where == ["lmo/variants.py"], (rule, where)


def test_the_scan_can_fail():
    assert kind_literals(ast.parse('x = ("sync", "2bw")\ny = ["ef", "pipedream"]\nz = ("sync",)')) == [1, 2]
