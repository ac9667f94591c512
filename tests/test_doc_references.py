"""Documentation that says what the code does (issue 30): references to numbered
subsections of docs/design.md point at subsections that exist, and docs/interfaces.md names
theory's and verify's constants and series as their code has them (issue 28, item 5). Every
signature of docs/interfaces.md is checked by tests/test_interfaces_doc.py."""
import re
from pathlib import Path

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


# --- theory and verify: docs/interfaces.md's names and module lists are the code's ---

def _section(name: str) -> str:
    """The text of ``## name`` in docs/interfaces.md, up to the next ``## `` heading."""
    text = (ROOT / "docs" / "interfaces.md").read_text()
    return re.search(rf"^## {name}\n(.*?)(?=^## |\Z)", text, re.M | re.S).group(1)


def test_interfaces_name_what_theory_and_verify_hold():
    from theory.results import implications
    from theory.checks import witness_grid
    from verify import montecarlo, variants
    th, ve = _section("theory"), _section("verify")
    said = " ".join(th.split())
    assert f"`INSTANCES`: the {len(witness_grid.INSTANCES)}-instance base grid" in said
    assert f"`CORNERS`: the domain's {len(witness_grid.CORNERS)} corners" in said
    for v in implications.VARIANTS:
        assert f'`"{v}"`' in th
    for v in variants.RUN_VARIANTS:
        assert f"`{v}`" in ve
    assert ", ".join(montecarlo.SERIES) in " ".join(ve.split())


def test_every_theory_module_is_named_once_in_the_docs():
    """docs/interfaces.md holds the one list of theory's modules (tests/test_interfaces_doc.py checks
    it names every module); docs/design.md §2 and the README point there instead of a copy."""
    # theory's modules live in its parts (theory.records.bound, ...): dotted paths below theory
    mods = sorted(".".join(f.relative_to(ROOT / "theory").with_suffix("").parts)
                  for f in (ROOT / "theory").rglob("*.py") if not f.stem.startswith("__"))
    assert len(mods) > 20 and all("." in m for m in mods), mods
    th = _section("theory")
    assert not [m for m in mods if f"`theory.{m}`" not in th], "docs/interfaces.md misses a theory module"
    for doc in (ROOT / "docs" / "design.md", ROOT / "README.md"):
        text = doc.read_text()
        copied = [m for m in mods if f"`{m.split('.')[-1]}`" in text or f"`theory.{m}`" in text]
        assert len(copied) < len(mods) // 2, f"{doc.name} lists theory's modules again: {copied}"
        assert "docs/interfaces.md" in text, f"{doc.name} does not point at docs/interfaces.md"
