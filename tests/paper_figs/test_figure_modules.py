"""Figures own their grids (issue 40, item 4): no figure module imports another (the grids
several figures share are in paper_figs/figures/grids.py), every figure's spec has a row for
every profile, and Profile keeps only what is profile-wide."""
import ast
import dataclasses
from pathlib import Path

from paper_figs.figures import CATALOG
from paper_figs.figures.common import TunedReading
from paper_figs.records.profiles import PROFILES, Profile, get_profile, with_grid

FIGURES_DIR = Path(__file__).resolve().parents[2] / "paper_figs" / "figures"
#: the modules of paper_figs/figures that are not figures: what every figure (or several) shares
SHARED = {"__init__", "common", "grids", "best_lrs", "external", "plotting", "tuned_lrs", "correctors_readings"}


def _module_of(entry) -> str:
    mod = entry.module if isinstance(entry, TunedReading) else entry
    return mod.__name__.rsplit(".", 1)[-1]


def figure_modules() -> set[str]:
    return {_module_of(e) for e in CATALOG.values()}


def imported_siblings(path: Path) -> set[str]:
    """The modules of paper_figs/figures that ``path`` imports, at any depth of its code
    (function-local imports included): ``from . import x``, ``from .x import y``,
    ``from paper_figs.figures import x``, ``from paper_figs.figures.x import y``, ``import paper_figs.figures.x``."""
    siblings = {p.stem for p in FIGURES_DIR.glob("*.py")}
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level == 1 or (node.level == 0 and mod.startswith("paper_figs.figures")):
                rest = mod[len("paper_figs.figures"):].lstrip(".") if node.level == 0 else mod
                if rest:
                    out.add(rest.split(".")[0])
                else:
                    out |= {a.name for a in node.names}
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("paper_figs.figures."):
                    out.add(a.name.split(".")[2])
    return out & siblings


def test_every_module_is_a_figure_or_shared():
    """A new module of paper_figs/figures is either registered in the catalog or named shared here."""
    modules = {p.stem for p in FIGURES_DIR.glob("*.py")}
    assert modules == figure_modules() | SHARED, modules ^ (figure_modules() | SHARED)
    assert not figure_modules() & SHARED


def test_no_figure_module_imports_another():
    figures = figure_modules()
    bad = {f: sorted(imported_siblings(FIGURES_DIR / f"{f}.py") & figures - {f}) for f in sorted(figures)}
    assert not {f: v for f, v in bad.items() if v}, bad


def test_the_import_check_sees_a_figure_import(tmp_path):
    """The check can fail: each spelling of an import of a figure module is seen."""
    for line in ("from . import fig4", "from .fig4 import lr_setting", "def f():\n    from . import table1",
                 "from paper_figs.figures import fig5", "from paper_figs.figures.fig6 import grid",
                 "import paper_figs.figures.moe"):
        f = tmp_path / "m.py"
        f.write_text(line + "\n")
        assert imported_siblings(f) & figure_modules(), line
    f.write_text("from .common import variant\nfrom .grids import shared\nfrom .. import plotting\n")
    assert not imported_siblings(f) & figure_modules()


def test_shared_modules_import_no_figure():
    figures = figure_modules()
    bad = {m: sorted(imported_siblings(FIGURES_DIR / f"{m}.py") & figures) for m in SHARED - {"__init__"}}
    assert not {m: v for m, v in bad.items() if v}, bad


def test_profile_keeps_at_most_17_fields():
    """15 after the last reorganisation, plus the sequential plan's two (docs/plan.md: the batch a
    profile stands at and the profile before the plan, from which each earlier look is rebuilt)."""
    assert len(dataclasses.fields(Profile)) <= 17, [f.name for f in dataclasses.fields(Profile)]


def test_every_spec_table_names_full_and_only_profiles():
    """A figure's knobs are looked up by profile name, a profile a table does not name taking
    the full profile's row: every table has that row, and names no profile that does not exist."""
    import importlib
    for m in sorted(figure_modules() | {"grids", "external"}):
        mod = importlib.import_module(f"paper_figs.figures.{m}")
        if hasattr(mod, "SPECS"):
            assert "full" in mod.SPECS and set(mod.SPECS) <= set(PROFILES), m


def test_a_new_profile_is_one_entry_in_one_file(monkeypatch):
    """Registering a profile (profiles.py alone) gives every figure its grid: the full
    profile's, at the new profile's scale; and a figure's own row still wins where it has one."""
    from paper_figs.pipeline import split_runs
    from paper_figs.records import profiles as P
    full = get_profile("full")
    new = dataclasses.replace(full, name="workstation", description="a throwaway profile", jobs=4)
    monkeypatch.setitem(P.PROFILES, "workstation", new)
    names = list(CATALOG)
    got, want = split_runs(new, names), split_runs(full, names)
    assert {n: v["live"] for n, v in got.items()} == {n: v["live"] for n, v in want.items()}
    micro_like = dataclasses.replace(get_profile("micro"), name="micro")
    assert split_runs(micro_like, ["fig5"])["fig5"]["live"] != want["fig5"]["live"]   # micro's own row


def test_catalog_names_are_the_cli_names():
    assert all(p.figures is None or set(p.figures) <= set(CATALOG) for p in PROFILES.values())
    assert CATALOG["fig3_tuned"].module is CATALOG["fig3"]
    assert CATALOG["fig2_tuned"].module is CATALOG["fig2_table2"]


def test_grid_changes_reach_a_figure_and_only_it():
    from paper_figs.figures import fig5, grids
    p = get_profile("micro")
    q = with_grid(with_grid(p, "fig5", scale_seeds=(3,)), "grids", horizons=(4,))
    assert fig5.spec(q).scale_seeds == (3,) and fig5.spec(p).scale_seeds == (0,)
    assert grids.shared(q).horizons == (4,) and grids.shared(p).horizons == (4, 8)
    assert fig5.spec(q).scale_horizons == fig5.spec(p).scale_horizons
