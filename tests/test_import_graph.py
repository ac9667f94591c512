"""The module import graph: no cycle anywhere, and imports only in the documented direction.

docs/design.md §2: `lmo` and `theory` import nothing of ours; `verify` imports `lmo` and
`theory`; `gpu_runs` imports `lmo` and `theory`; `paper_figs` may import everything;
nothing imports `paper_figs`. Inside `theory`, every module lives in one of its parts (records,
proofs, checks, results, examples, dynamics), a part's `__init__` imports nothing, records import no
other part, only examples import examples, and the parts stand in layers (`THEORY_LAYERS`: records
and dynamics < proofs < checks < results < examples) that no import climbs. paper_figs stands in
layers too (`PAPER_FIGS_LAYERS`). Every import counts, function-local ones included, so a
cycle cannot hide behind a deferred import. The graph is built from the source with
`ast`, independently of what Python happens to have imported.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("lmo", "theory", "verify", "gpu_runs", "paper_figs")
ALLOWED = {
    "lmo": set(),
    "theory": set(),
    "verify": {"lmo", "theory"},
    "gpu_runs": {"lmo", "theory"},
    "paper_figs": {"lmo", "theory", "verify", "gpu_runs"},
}


def _modules() -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of our packages."""
    out = {}
    for pkg in PACKAGES:
        for f in (ROOT / pkg).rglob("*.py"):
            parts = list(f.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = f
    return out


def _resolve(name: str, modules: dict) -> str | None:
    """The longest prefix of ``name`` that is one of our modules."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        cand = ".".join(parts[:k])
        if cand in modules:
            return cand
    return None


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> set of our modules it imports (anywhere in the file)."""
    graph: dict[str, set[str]] = {}
    for mod, f in modules.items():
        is_pkg = f.name == "__init__.py"
        base = mod.split(".") if is_pkg else mod.split(".")[:-1]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(f.read_text(), filename=str(f))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    anchor = base[: len(base) - (node.level - 1)]
                    src = ".".join(anchor + ([node.module] if node.module else []))
                else:
                    src = node.module or ""
                # `from pkg import sub` names a submodule when sub is one
                targets = [f"{src}.{a.name}" if f"{src}.{a.name}" in modules else src
                           for a in node.names]
            for t in targets:
                r = _resolve(t, modules)
                if r is not None and r != mod:
                    deps.add(r)
        graph[mod] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


GRAPH = import_graph(_modules())


def test_graph_is_not_empty():
    assert len(GRAPH) > 50 and sum(len(d) for d in GRAPH.values()) > 50


def test_no_import_cycle():
    found = cycles(GRAPH)
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize("pkg", PACKAGES)
def test_imports_follow_the_documented_direction(pkg):
    bad = sorted(f"{m} -> {d}" for m, deps in GRAPH.items() if m.split(".")[0] == pkg
                 for d in deps if d.split(".")[0] not in ALLOWED[pkg] | {pkg})
    assert not bad, f"{pkg} imports against docs/design.md §2: {bad}"


#: theory's four parts (docs/design.md §2), its examples and dynamics (issue 48 item 4: the
#: loss law in tau, docs/tau_law.md); every module of theory but the package and its command
#: line lives in one of them
THEORY_PARTS = ("records", "proofs", "checks", "results", "examples", "dynamics")


def theory_part_violations(graph: dict[str, set[str]]) -> list[str]:
    """The rules between theory's subpackages: a module lives in a part; a part's ``__init__``
    imports nothing (so ``from theory.checks import chain`` cannot pull a cycle in); records
    import no other part; nothing but an example imports an example."""
    bad = []
    for m, deps in graph.items():
        parts = m.split(".")
        if parts[0] != "theory" or m in ("theory", "theory.__main__"):
            continue
        if len(parts) < 2 or parts[1] not in THEORY_PARTS:
            bad.append(f"{m} is in none of theory's parts {THEORY_PARTS}")
            continue
        if len(parts) == 2 and deps:
            bad.append(f"{m} (a part's __init__) imports {sorted(deps)}")
        for d in deps:
            dpart = d.split(".")[1] if d.startswith("theory.") else None
            if parts[1] == "records" and d.split(".")[0] == "theory" and dpart != "records":
                bad.append(f"{m} -> {d} (records import no other part)")
            if dpart == "examples" and parts[1] != "examples":
                bad.append(f"{m} -> {d} (nothing imports an example)")
    for m, deps in graph.items():
        if m in ("theory", "theory.__main__"):
            bad += [f"{m} -> {d} (nothing imports an example)" for d in deps if d.startswith("theory.examples")]
    return sorted(bad)


def test_theory_is_in_four_parts_and_records_import_no_other_part():
    assert {m.split(".")[1] for m in GRAPH if m.startswith("theory.") and m != "theory.__main__"} \
        == set(THEORY_PARTS)
    bad = theory_part_violations(GRAPH)
    assert not bad, f"theory's parts (docs/design.md §2): {bad}"


def test_the_part_rules_catch_planted_violations():
    planted = {k: set(v) for k, v in GRAPH.items()}
    planted["theory.records.bound"].add("theory.checks.step")
    planted["theory.checks"] = {"theory.checks.chain"}
    planted["theory.flat_module"] = set()
    planted["theory.results.rates"].add("theory.examples.delayed_lemma")
    bad = theory_part_violations(planted)
    assert any("theory.records.bound -> theory.checks.step" in b for b in bad)
    assert any(b.startswith("theory.checks (a part's __init__)") for b in bad)
    assert any(b.startswith("theory.flat_module is in none") for b in bad)
    assert any("theory.results.rates -> theory.examples.delayed_lemma" in b for b in bad)


def test_the_checker_catches_a_planted_cycle_and_a_back_arrow():
    planted = {k: set(v) for k, v in GRAPH.items()}
    planted["lmo.base"].add("lmo.adam_family")
    planted["lmo.adam_family"].add("lmo.base")
    assert any({"lmo.base", "lmo.adam_family"} <= set(c) for c in cycles(planted))
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert cycles(g) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_file_cites_the_design_file_outside_the_repository():
    hits = [str(f.relative_to(ROOT)) for pkg in PACKAGES + ("docs", "tests")
            for f in (ROOT / pkg).rglob("*") if f.suffix in (".py", ".md", ".sh")
            and f.name != Path(__file__).name and "DESIGN" in f.read_text()]
    hits += ["README.md"] if "DESIGN" in (ROOT / "README.md").read_text() else []
    assert not hits, f"cite docs/design.md instead of DESIGN in: {hits}"


#: paper_figs' layers, lowest first (docs/design.md §2): what was trained, the verdict
#: arithmetic, the figures, the report; the package's top-level modules are its commands.
PAPER_FIGS_LAYERS = (("records",), ("statistics",), ("figures",), ("report",))


def layer_of(module: str, layers: tuple) -> int:
    """The index of the layer that holds ``module``'s part (its second name), counting from
    the lowest; ``len(layers)`` for the package itself and its top-level modules."""
    parts = module.split(".")
    for i, layer in enumerate(layers):
        if len(parts) >= 2 and parts[1] in layer:
            return i
    return len(layers)


def layer_violations(graph: dict[str, set[str]], package: str, layers: tuple) -> list[str]:
    """Every import inside ``package`` that points to a higher layer, or across the parts of
    one layer (``layers``: tuples of part names, lowest first); the graph holds function-level
    imports too (`import_graph`)."""
    bad = []
    for m, deps in graph.items():
        if m.split(".")[0] != package:
            continue
        for d in deps:
            if d.split(".")[0] != package:
                continue
            lm, ld = layer_of(m, layers), layer_of(d, layers)
            across = lm == ld < len(layers) and m.split(".")[1] != d.split(".")[1]
            if ld > lm or across:
                bad.append(f"{m} -> {d}")
    return sorted(bad)


def paper_figs_layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """paper_figs' rule: a statistic imports no figure or command, a record no statistic, ...;
    and the package ``paper_figs`` itself imports nothing."""
    own = sorted(f"paper_figs -> {d}" for d in graph.get("paper_figs", ()) if d.startswith("paper_figs"))
    return sorted(own + layer_violations(graph, "paper_figs", PAPER_FIGS_LAYERS))


def test_paper_figs_stands_in_layers():
    layers = {m.split(".")[1] for m in GRAPH if m.count(".") >= 2 and m.startswith("paper_figs.")}
    assert {p for layer in PAPER_FIGS_LAYERS for p in layer} <= layers
    bad = paper_figs_layer_violations(GRAPH)
    assert not bad, f"paper_figs imports against its layers {PAPER_FIGS_LAYERS} < commands: {bad}"


def test_the_layer_rule_catches_planted_back_imports():
    planted = {k: set(v) for k, v in GRAPH.items()}
    planted["paper_figs.statistics.machine_noise"].add("paper_figs.cross_machine")
    planted["paper_figs.records.runs"].add("paper_figs.statistics.protocol")
    planted["paper_figs.figures.common"].add("paper_figs.report.markdown")
    bad = paper_figs_layer_violations(planted)
    assert bad == sorted(["paper_figs.statistics.machine_noise -> paper_figs.cross_machine",
                          "paper_figs.records.runs -> paper_figs.statistics.protocol",
                          "paper_figs.figures.common -> paper_figs.report.markdown"])


#: theory's layers, lowest first (docs/interfaces.md, "theory"; issue 49 item 4): what is
#: claimed (records) and the loss law on a quadratic (dynamics, which reads no other part), the
#: derivations (proofs), whether they hold (checks), what the bounds say (results), a bound read
#: in one place (examples); the package and its command line stand above them all. A module may
#: import its own part or a part of a lower layer, never a higher layer nor the other part of its
#: own layer.
THEORY_LAYERS = (("records", "dynamics"), ("proofs",), ("checks",), ("results",), ("examples",))


def theory_layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import inside theory that points to a higher layer (a proof importing a check, a
    check importing a result, ...) or across the parts of one layer (records <-> dynamics)."""
    return layer_violations(graph, "theory", THEORY_LAYERS)


def test_theory_stands_in_layers():
    parts = {m.split(".")[1] for m in GRAPH if m.startswith("theory.") and m != "theory.__main__"}
    assert parts == {p for layer in THEORY_LAYERS for p in layer}
    bad = theory_layer_violations(GRAPH)
    assert not bad, f"theory imports against its layers {THEORY_LAYERS} < theory: {bad}"


def test_the_theory_layer_rule_catches_planted_back_imports():
    planted = {k: set(v) for k, v in GRAPH.items()}
    planted["theory.proofs.derivation"].add("theory.checks.step")
    planted["theory.checks.world"].add("theory.results.limits")
    planted["theory.records.bound"].add("theory.dynamics.stability")
    planted["theory.results.slack"].add("theory.examples.delayed_lemma")
    planted["theory.checks.chain"].add("theory")
    assert theory_layer_violations(planted) == sorted([
        "theory.proofs.derivation -> theory.checks.step", "theory.checks.world -> theory.results.limits",
        "theory.records.bound -> theory.dynamics.stability",
        "theory.results.slack -> theory.examples.delayed_lemma", "theory.checks.chain -> theory"])


def test_a_function_level_back_import_is_in_the_graph(tmp_path):
    """A back-import hidden inside a function still counts: the graph is read with ``ast``."""
    fake = tmp_path / "derivation.py"
    fake.write_text("import sympy\n\n\ndef check(step):\n    from ..checks.step import check_step\n"
                    "    return check_step(step.lhs, step.rel, step.rhs)\n")
    mods = {"theory.proofs.derivation": fake, "theory.checks.step": ROOT / "theory/checks/step.py"}
    graph = import_graph(mods)
    assert graph["theory.proofs.derivation"] == {"theory.checks.step"}
    assert theory_layer_violations(graph) == ["theory.proofs.derivation -> theory.checks.step"]
