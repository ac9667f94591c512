"""Examples that run (issue 49 item 7), theory's half (tests/lmo/test_doctests.py is lmo's): the
docstring examples of every module of theory run as doctests, and every registered bound has its
example, a function of theory.examples.bounds named as the bound (PEPit's style: the algorithm, its
bound and a number), whose doctest prints the bound, the measured quantity and whether it holds.

The list of bounds is the registry itself (theory.records.registry.names): a new bound fails
here until its example is written, and an example whose bound is gone fails too.
"""
import doctest
import importlib
import inspect
import pkgutil
import types

import pytest

import theory
from theory.examples import bounds as examples
from theory.records.registry import get, names

MODULES = sorted(m.name for m in pkgutil.walk_packages(theory.__path__, "theory."))
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def bounds_without_example(registered, module) -> list[str]:
    """The registered names with no function of ``module`` whose docstring example calls it."""
    out = []
    for name in registered:
        fn = getattr(module, name, None)
        doc = (inspect.getdoc(fn) or "") if inspect.isfunction(fn) else ""
        if f">>> b, m = {name}(" not in doc:
            out.append(name)
    return out


def examples_without_bound(registered, module) -> list[str]:
    """Functions of ``module`` with a bound's example whose bound is not registered (any more)."""
    return sorted(n for n, o in vars(module).items() if inspect.isfunction(o) and o.__module__ == module.__name__
                  and f">>> b, m = {n}(" in (inspect.getdoc(o) or "") and n not in registered)


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=FLAGS, report=True, verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples fail"


def test_every_registered_bound_has_its_example():
    assert len(names()) >= 20
    assert bounds_without_example(names(), examples) == []
    assert examples_without_bound(names(), examples) == []


def test_an_example_says_what_the_registry_says():
    """Each example holds exactly when its bound is registered valid (the noise term alone and C4 at
    y_t are registered not valid, and their examples show them exceeded), so an example cannot
    quietly disagree with its record."""
    for name in names():
        b, m = getattr(examples, name)()
        assert (b >= m) == bool(get(name).valid), name


def test_the_checks_can_fail():
    # a bound lowered by 20 % would be exceeded in its own example: the drift is attained there
    b, m = examples.derived_delayed_lemma()
    assert 0.8 * b < m <= b
    # a registered name without its example, and an example left behind by a removed bound
    assert bounds_without_example(names() + ["planted_bound"], examples) == ["planted_bound"]
    assert examples_without_bound([n for n in names() if n != "paper_c2_y"], examples) == ["paper_c2_y"]
    # a wrong printed number fails its doctest
    planted = types.ModuleType("planted")
    exec("def shown():\n    '''\n    >>> round(2 ** 0.5, 3)\n    1.415\n    '''\n", planted.__dict__)
    assert doctest.testmod(planted, report=False).failed == 1
