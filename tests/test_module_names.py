"""No package exposes a name that is also one of its submodules (issue 28, item 4).

``lmo.chain`` used to be the function ``chain`` or the module ``lmo/chain.py`` depending on
what had been imported, and ``gpu_runs`` re-exported ``train`` from ``gpu_runs/train.py``, so
``python -m gpu_runs.train`` ran a module its package had already imported (runpy's "found
in sys.modules" warning, silenced by a filter). docs/design.md §2: ``p.m`` is always the
module, and a command module is not imported by its package. These tests fail if a clash
comes back:

- statically: no package ``__init__`` binds a submodule's name to anything but that module;
- dynamically: after importing every module, ``getattr(p, m) is sys.modules["p.m"]``;
- importing a package does not import its command modules (those with a ``__main__``
  block), so ``python -W error::RuntimeWarning -m p.m`` runs; checked on the commands
  whose clash this fixed; and no module of ours installs a warnings filter that would hide
  runpy's warning again.
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("lmo", "theory", "verify", "gpu_runs", "paper_figs")
MAIN_BLOCK = re.compile(r"^if __name__ == ['\"]__main__['\"]:", re.M)


def _packages() -> dict[str, Path]:
    """Dotted package name -> its directory, subpackages included."""
    out = {}
    for top in PACKAGES:
        for init in sorted((ROOT / top).rglob("__init__.py")):
            out[".".join(init.parent.relative_to(ROOT).parts)] = init.parent
    return out


def _submodules(pkg_dir: Path) -> set[str]:
    mods = {f.stem for f in pkg_dir.glob("*.py") if f.stem not in ("__init__", "__main__")}
    return mods | {d.name for d in pkg_dir.iterdir() if (d / "__init__.py").is_file()}


def _bindings(tree: ast.Module, pkg: str):
    """(name, node, is_that_submodule) for every name the module binds at its top level
    (inside top-level if / try blocks too)."""
    def walk(body):
        for node in body:
            if isinstance(node, (ast.If, ast.Try)):
                yield from walk(node.body + node.orelse + getattr(node, "finalbody", []) +
                                [s for h in getattr(node, "handlers", []) for s in h.body])
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield node.name, node, False
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            yield n.id, node, False
            elif isinstance(node, ast.ImportFrom):
                # ``from . import m`` / ``from pkg import m``: binds the submodule itself
                src = "." * node.level + (node.module or "")
                own = src in (".", pkg)
                for a in node.names:
                    yield a.asname or a.name, node, own and (a.asname in (None, a.name))
            elif isinstance(node, ast.Import):
                for a in node.names:
                    yield a.asname or a.name.split(".")[0], node, False
    yield from walk(tree.body)


def test_no_package_init_binds_a_submodule_name_to_something_else():
    bad = []
    for pkg, d in _packages().items():
        subs = _submodules(d)
        tree = ast.parse((d / "__init__.py").read_text())
        for name, node, is_module in _bindings(tree, pkg):
            if name in subs and not is_module:
                bad.append(f"{pkg}/__init__.py:{node.lineno}: binds {name!r}, the name of the module {pkg}.{name}")
    assert not bad, "\n".join(bad)


def _import_all() -> list[str]:
    """Import every module of our packages; the names of those whose third-party
    dependencies are missing here (skipped, with the reason)."""
    missing = []
    for pkg, d in _packages().items():
        importlib.import_module(pkg)
        for m in sorted(_submodules(d)):
            try:
                importlib.import_module(f"{pkg}.{m}")
            except ModuleNotFoundError as e:
                if (e.name or "").split(".")[0] in PACKAGES:
                    raise
                missing.append(f"{pkg}.{m} ({e.name})")
    return missing


def test_every_package_attribute_named_like_a_submodule_is_that_module():
    missing = _import_all()
    bad = []
    for pkg, d in _packages().items():
        p = sys.modules[pkg]
        for m in sorted(_submodules(d)):
            full = f"{pkg}.{m}"
            if full not in sys.modules:
                continue
            got = getattr(p, m, None)
            if got is not sys.modules[full]:
                bad.append(f"{pkg}.{m} is {got!r}, not the module {full}")
            if m in getattr(p, "__all__", ()):
                bad.append(f"{pkg}.__all__ lists {m!r}, the name of the module {full}")
    assert not bad, "\n".join(bad)
    if missing:
        pytest.skip(f"not importable here (missing dependencies): {missing}")


def _commands() -> dict[str, list[str]]:
    """package -> its command modules (a ``__main__`` block; ``__main__.py`` excluded)."""
    out: dict[str, list[str]] = {}
    for pkg, d in _packages().items():
        for f in sorted(d.glob("*.py")):
            if f.stem not in ("__init__", "__main__") and MAIN_BLOCK.search(f.read_text()):
                out.setdefault(pkg, []).append(f"{pkg}.{f.stem}")
    return out


@pytest.mark.parametrize("pkg", sorted(_commands()))
def test_importing_a_package_does_not_import_its_commands(pkg):
    """``python -m pkg.mod`` imports ``pkg`` first; if that already imported ``pkg.mod``,
    runpy warns and runs a second copy of the module."""
    mods = _commands()[pkg]
    code = f"import sys, {pkg}; print([m for m in {mods!r} if m in sys.modules])"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]", f"import {pkg} imports its command modules {r.stdout.strip()}"


@pytest.mark.parametrize("cmd", ["gpu_runs.train", "verify.coverage", "gpu_runs.builtin_corpus", "gpu_runs.pipeline.bench",
                                 "gpu_runs.pipeline.convert"])
def test_command_runs_with_runtime_warnings_as_errors(cmd):
    r = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m", cmd, "--help"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "found in sys.modules" not in r.stderr, r.stderr
    assert "usage:" in r.stdout


def test_no_module_of_ours_silences_runpy_with_a_warnings_filter():
    """The old workaround (a process-wide ``warnings.filterwarnings`` in ``gpu_runs/__init__``
    for runpy's "found in sys.modules") would hide the clash from the test above."""
    bad = [f"{f.relative_to(ROOT)}" for top in PACKAGES for f in (ROOT / top).rglob("*.py")
           if re.search(r"\b(filterwarnings|simplefilter)\(", f.read_text())]
    assert not bad, f"process-wide warning filters in {bad}"


def test_the_clashing_names_are_the_functions_and_their_modules_are_named_for_what_they_hold():
    import gpu_runs
    import lmo
    import verify
    from lmo import clipping, combine, ef_correction, polar_factor
    from verify import coverage, planted_bounds
    assert lmo.chain is combine.chain and lmo.partition is combine.partition
    assert lmo.clip_by_global_norm is clipping.clip_by_global_norm
    assert lmo.error_feedback is ef_correction.error_feedback
    assert lmo.newton_schulz is polar_factor.newton_schulz
    assert verify.mutants is planted_bounds.mutants
    assert verify.coverage is coverage and callable(coverage.coverage)
    import gpu_runs.train
    assert gpu_runs.train is sys.modules["gpu_runs.train"] and callable(gpu_runs.train.train)
    for gone in ("lmo.chain", "lmo.partition", "lmo.error_feedback", "verify.mutants"):
        assert importlib.util.find_spec(gone) is None, f"{gone} is back"
