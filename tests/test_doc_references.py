"""Documentation that says what the code does (issue 30): references to numbered
subsections of docs/design.md point at subsections that exist, and docs/interfaces.md
gives Muon's defaults as lmo.muon has them, and theory's and verify's signatures, names and
modules as their code has them (issue 28, item 5)."""
import ast
import inspect
import re
from pathlib import Path

import pytest

import lmo

ROOT = Path(__file__).resolve().parents[1]
#: the packages whose references this suite checks (theory/ is checked by its owners' tests)
CHECKED = ("lmo", "gpu_runs", "verify", "docs")


def _sections() -> set[str]:
    heads = re.findall(r"^#{2,4} (\d+(?:\.\d+)*)\.? ", (ROOT / "docs" / "design.md").read_text(), re.M)
    return set(heads)


def test_design_subsection_references_exist():
    have = _sections()
    bad = []
    for pkg in CHECKED:
        for f in (ROOT / pkg).rglob("*"):
            if f.suffix not in (".py", ".md"):
                continue
            for ref in re.findall(r"design\.md §(\d+\.\d+)(?:-(\d+\.\d+))?", f.read_text()):
                bad += [f"{f.relative_to(ROOT)}: §{r}" for r in ref if r and r not in have]
    assert not bad, bad


def test_interfaces_give_muons_ns_dtype_default():
    text = (ROOT / "docs" / "interfaces.md").read_text()
    doc = re.search(r"`muon\(lr,[^`]*ns_dtype=([^,)]+)", text).group(1)
    assert doc.strip("\"'") == str(inspect.signature(lmo.muon).parameters["ns_dtype"].default)


# --- theory and verify: docs/interfaces.md's signatures, names and module lists are the code's ---

def _section(name: str) -> str:
    """The text of ``## name`` in docs/interfaces.md, up to the next ``## `` heading."""
    text = (ROOT / "docs" / "interfaces.md").read_text()
    return re.search(rf"^## {name}\n(.*?)(?=^## |\Z)", text, re.M | re.S).group(1)


def _documented_call(text: str, name: str) -> list[str]:
    """The parameters of the first `` `name(...)` `` in text, split at top-level commas."""
    i = text.index(f"`{name}(") + len(name) + 2
    depth, parts, cur = 0, [], ""
    for ch in text[i:]:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [" ".join(p.split()) for p in parts if p.strip()]


def _documented():
    import theory
    import verify
    from theory import mutation, rates, witness_runs, world_check
    from verify.coverage import coverage   # not re-exported: verify.coverage is the module (a command)
    return [("theory", n, o) for n, o in (
        ("check", theory.check), ("check_step", theory.check_step), ("proof_text", theory.proof_text),
        ("simulate", witness_runs.simulate), ("check_world", world_check.check_world),
        ("mutation_table", mutation.mutation_table), ("delay_price", rates.delay_price))] + \
        [("verify", n, getattr(verify, n)) for n in (
            "random_quadratic", "random_least_squares", "random_cosine_sum", "StudentT", "run",
            "check_bound", "check_run", "applicable", "search", "instances", "run_report",
            "make_theory_figures")] + [("verify", "coverage", coverage)]


@pytest.mark.parametrize("section,name,obj", _documented(), ids=lambda x: x if isinstance(x, str) else "")
def test_interfaces_give_theory_and_verify_defaults(section, name, obj):
    params = inspect.signature(obj).parameters
    for part in _documented_call(_section(section), name):
        if part in ("...", "**kw") or part.startswith("**"):
            continue
        key, _, default = part.partition("=")
        key = key.strip().lstrip("*")
        assert key in params, f"docs/interfaces.md: {name}() documents {key!r}; the code has {list(params)}"
        if default:
            want = params[key].default
            try:
                doc = ast.literal_eval(default.strip())
            except (ValueError, SyntaxError):
                doc = default.strip()
            assert doc == want, f"docs/interfaces.md: {name}({key}={default}); the code's default is {want!r}"


def test_interfaces_name_what_theory_and_verify_hold():
    from theory import implications, witness_grid
    from verify import montecarlo, variants
    th, ve = _section("theory"), _section("verify")
    assert f"`INSTANCES`: {len(witness_grid.INSTANCES)} instances" in th
    for v in implications.VARIANTS:
        assert f'`"{v}"`' in th
    for v in variants.RUN_VARIANTS:
        assert f"`{v}`" in ve
    assert ", ".join(montecarlo.SERIES) in " ".join(ve.split())


def test_every_theory_module_is_named_in_the_docs():
    mods = sorted(f.stem for f in (ROOT / "theory").glob("*.py") if not f.stem.startswith("__"))
    th = _section("theory")
    design = (ROOT / "docs" / "design.md").read_text()
    readme = (ROOT / "README.md").read_text()
    assert not [m for m in mods if f"`theory.{m}`" not in th], "docs/interfaces.md misses a theory module"
    assert not [m for m in mods if f"`{m}`" not in design], "docs/design.md §2 misses a theory module"
    assert not [m for m in mods if f"`{m}`" not in readme and f"`theory.{m}`" not in readme], \
        "README.md's tour misses a theory module"
