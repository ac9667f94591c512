"""Examples that run (issue 49 item 7): the docstring examples of every module of lmo are run as
doctests, and every public function and class of lmo shows at least one.

Public: a function or class defined in the module, its name without a leading underscore
(methods are not counted, nor the NamedTuple state records, whose example is their optimizer's). ``lmo.bench`` (benchmark commands, whose outputs are timings) is
left out. ``WITHOUT_EXAMPLE`` is what still lacks one: the test fails when a public name outside
it has no example (a new function comes with its example) and when a name in it has gained one
(the list only shrinks, and says what is left).
"""
import doctest
import importlib
import inspect
import pkgutil
import types

import pytest

import lmo

MODULES = sorted(m.name for m in pkgutil.walk_packages(lmo.__path__, "lmo.")
                 if not m.name.startswith("lmo.bench"))

#: module -> public names that have no example yet (delay.py, variants.py and torch_adapter.py are
#: being changed on other branches as this is written; their examples come after those merges)
WITHOUT_EXAMPLE = {
    "lmo.delay": {"dc_correct", "delayed", "flush_applied", "next_applied", "phase", "virtual_offset"},
    "lmo.torch_adapter": {"TorchOptimizer"},
    "lmo.variants": {"Delay", "theory_variant"},
}


def public(module) -> dict:
    """name -> object: the module's own public functions and classes."""
    return {n: o for n, o in vars(module).items()
            if not n.startswith("_") and (inspect.isfunction(o) or inspect.isclass(o))
            and o.__module__ == module.__name__ and not is_state_record(o)}


def is_state_record(obj) -> bool:
    return inspect.isclass(obj) and issubclass(obj, tuple) and hasattr(obj, "_fields")


def without_example(module) -> set:
    return {n for n, o in public(module).items() if ">>>" not in (inspect.getdoc(o) or "")}


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             report=True, verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples fail"


@pytest.mark.parametrize("name", MODULES)
def test_every_public_function_has_an_example(name):
    module = importlib.import_module(name)
    missing, allowed = without_example(module), WITHOUT_EXAMPLE.get(name, set())
    assert missing <= allowed, f"{name}: public names without a docstring example: {sorted(missing - allowed)}"
    gone = allowed - set(public(module))
    assert not gone, f"{name}: {sorted(gone)} no longer exist: drop them from WITHOUT_EXAMPLE"
    assert allowed <= missing, f"{name}: these have an example now, drop them from WITHOUT_EXAMPLE: {sorted(allowed - missing)}"


def test_the_check_can_fail():
    planted = types.ModuleType("planted")
    exec("def shown():\n    '''\n    >>> 1 + 1\n    2\n    '''\n\ndef bare():\n    'no example'\n\n"
         "def wrong():\n    '''\n    >>> 1 + 1\n    3\n    '''\n", planted.__dict__)
    assert without_example(planted) == {"bare"}
    assert doctest.testmod(planted, report=False).failed == 1


def test_the_census():
    """Counts for the record: public names of lmo, how many have an example, how many examples run."""
    total = sum(len(public(importlib.import_module(m))) for m in MODULES)
    left = sum(len(v) for v in WITHOUT_EXAMPLE.values())
    assert total >= 150 and left < total
