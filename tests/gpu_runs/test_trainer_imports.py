"""The trainer imports no pipeline module: ``python -m gpu_runs.train`` and everything it
imports, function-level imports included, stay outside ``gpu_runs.pipeline`` (the pipeline
may import the trainer's modules, never the other way round).

The graph is read from the source with ``ast`` (every ``import`` anywhere in a file counts,
and importing ``a.b.c`` imports the packages ``a`` and ``a.b`` too), so a deferred import
cannot hide a back-import; a planted one is caught.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TRAINER = "gpu_runs.train"
PIPELINE = "gpu_runs.pipeline"


def sources() -> dict[str, str]:
    """Dotted name -> source text of every module of gpu_runs."""
    out = {}
    for f in (ROOT / "gpu_runs").rglob("*.py"):
        parts = list(f.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f.read_text()
    return out


def imports_of(mod: str, text: str, modules) -> set[str]:
    """The gpu_runs modules ``mod`` imports anywhere in ``text``, with their parent packages."""
    is_pkg = f"{mod}.__init__" not in modules and any(m.startswith(mod + ".") for m in modules)
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    names = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            src = node.module or ""
            if node.level:
                src = ".".join(base[: len(base) - (node.level - 1)] + ([node.module] if node.module else []))
            names += [f"{src}.{a.name}" if f"{src}.{a.name}" in modules else src for a in node.names]
    out = set()
    for name in names:
        parts = name.split(".")
        for k in range(1, len(parts) + 1):
            if ".".join(parts[:k]) in modules:
                out.add(".".join(parts[:k]))
    out.discard(mod)
    return out


def closure(start: str, srcs: dict[str, str]) -> dict[str, str]:
    """{module: the module that first imported it} of everything ``start`` imports, transitively."""
    seen, todo = {start: None}, [start]
    while todo:
        mod = todo.pop()
        for dep in sorted(imports_of(mod, srcs[mod], srcs)):
            if dep not in seen:
                seen[dep] = mod
                todo.append(dep)
    return seen


def pipeline_in(start: str, srcs: dict[str, str]) -> dict[str, str]:
    """The pipeline modules in ``start``'s import closure, each with its importer."""
    return {m: by for m, by in closure(start, srcs).items() if m == PIPELINE or m.startswith(PIPELINE + ".")}


def test_the_trainer_imports_no_pipeline_module():
    srcs = sources()
    assert TRAINER in srcs and f"{PIPELINE}.worker" in srcs
    assert pipeline_in(TRAINER, srcs) == {}


def test_a_planted_back_import_is_caught():
    """The test above can fail: a function-level import of a pipeline module in a module the
    trainer imports (here gpu_runs.interrupt) puts the pipeline into its closure."""
    srcs = sources()
    srcs["gpu_runs.interrupt"] += "\n\ndef _planted():\n    from gpu_runs.pipeline.checkpoint import find_set\n"
    found = pipeline_in(TRAINER, srcs)
    assert found.get("gpu_runs.pipeline.checkpoint") == "gpu_runs.interrupt"
    assert "gpu_runs.pipeline" in found   # the package's __init__ runs too
