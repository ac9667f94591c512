"""docs/interfaces.md, "How to add", walked on throwaway additions (issue 49 item 6): a corrector, a
figure and a lemma are registered the way their recipe says, seen in their listing and on their
command line, and removed again (the optimizer's recipe has its own walk:
tests/lmo/test_add_optimizer.py).

A recipe is an edit of source files; here the edit is made at run time with ``monkeypatch``. Where
a module copied the edited table when it was imported (a tuple derived from a dict, a parser's
choices bound by ``from ... import``), the test patches that copy too and says so: in the source
it is the same single edit, and these are the places where today's code is not one table.
"""
from __future__ import annotations

import dataclasses
import types

import pytest
import torch


# ----------------------------------------------------------------------------- a corrector
def test_the_corrector_recipe(monkeypatch, capsys):
    import lmo
    from lmo import variants
    from lmo.corrector_registry import CORRECTORS, with_corrector
    from lmo.delay import delayed
    from gpu_runs.train import parse_args

    built = []

    def dummy_corrector(opt, delay=1):
        """Step 1: the constructor (here: the plain delay, remembering that it was asked)."""
        built.append(delay)
        return delayed(opt, delay)

    args = ["--delay", "2bw", "--corrector", "dummy_corrector", "--steps", "2"]
    with pytest.raises(SystemExit):                    # unknown before it is registered
        parse_args(args)
    assert "dummy_corrector" in capsys.readouterr().err

    monkeypatch.setitem(CORRECTORS, "dummy_corrector", dummy_corrector)      # step 2: its entry
    # lmo.variants.RUN_CORRECTORS is derived from CORRECTORS at import: the same edit, re-derived here
    monkeypatch.setattr(variants, "RUN_CORRECTORS", tuple(c for c in CORRECTORS if c != "dc_asgd"))

    assert "dummy_corrector" in lmo.CORRECTORS                                # the listing
    opt = with_corrector(lmo.signum(0.1), "dummy_corrector", 2)
    assert built == [2] and opt.name == lmo.delayed(lmo.signum(0.1), 2).name
    cfg = parse_args(args)                                                    # the command line
    assert cfg.delay.corrector == "dummy_corrector"
    params = {"w": torch.ones(2, 2)}
    wrapped = cfg.delay.wrap(lmo.signum(0.1), total_steps=2)
    assert built == [2, 1] and set(wrapped.init(params)._fields) >= {"inner", "pending"}

    monkeypatch.undo()                                                        # removed everywhere
    assert "dummy_corrector" not in lmo.CORRECTORS
    with pytest.raises(SystemExit):
        parse_args(args)
    with pytest.raises(ValueError, match="corrector must be one of"):
        with_corrector(lmo.signum(0.1), "dummy_corrector", 2)


# ----------------------------------------------------------------------------- a figure
def dummy_figure_module():
    """Step 1: the figure's module, ``paper_figs/figures/dummy_fig.py`` (its name, title, grid and
    build; a real one has its SPECS per profile and its verdicts, e.g. fig6.py)."""
    from lmo.variants import SYNC
    from paper_figs.figures.common import FigureOutput, variant_grid

    mod = types.ModuleType("paper_figs.figures.dummy_fig")
    mod.NAME, mod.TITLE = "dummy_fig", "A throwaway figure: AdamW, synchronous"
    mod.grid = lambda p: variant_grid(p, (SYNC,), {"optimizer": ("adamw",)}, seeds=(0,))
    mod.build = lambda ctx: FigureOutput(mod.NAME, mod.TITLE, status="done")
    return mod


def test_the_figure_recipe(monkeypatch, tmp_path, capsys):
    from paper_figs import cli
    from paper_figs.figures import CATALOG
    from paper_figs.listing import list_profile
    from paper_figs.pipeline import select
    from paper_figs.records import profiles
    from paper_figs.records.kept import KeptStore

    def only_dummy():
        return cli.parser().parse_args(["--profile", "micro", "--only", "dummy_fig", "--list"]).only

    with pytest.raises(SystemExit):
        only_dummy()
    capsys.readouterr()

    mod = dummy_figure_module()
    monkeypatch.setitem(CATALOG, "dummy_fig", mod)                           # step 2: CATALOG, the one list
    assert only_dummy() == ["dummy_fig"] and select(["dummy_fig"]) == ["dummy_fig"]
    listing = list_profile(profiles.get_profile("micro"), only=["dummy_fig"], kept=KeptStore(tmp_path))
    assert "dummy_fig: 1 run(s): 1 new live" in listing                       # python -m paper_figs --list
    assert mod.build(None).status == "done"

    monkeypatch.undo()
    assert "dummy_fig" not in CATALOG
    with pytest.raises(ValueError, match="unknown figure"):
        select(["dummy_fig"])
    with pytest.raises(SystemExit):
        only_dummy()


# ----------------------------------------------------------------------------- a lemma
def test_the_lemma_recipe(monkeypatch, capsys):
    import theory
    from theory.__main__ import main
    from theory.checks.chain import chain_check
    from theory.examples import bounds as examples
    from theory.proofs import registry as proofs
    from theory.proofs.registry import get_derivation
    from theory.records import registry

    name = "dummy_sync_lemma"
    assert main(["--bound", name]) == 2 and name in capsys.readouterr().err   # unknown before

    # step 1: the record (Kovalev's restated lemma under another name), appended to package_bounds.ALL;
    # theory.records.registry derives ALL and its index from it at import: the same edit, re-derived here
    bound = dataclasses.replace(theory.get("kovalev_sync_lemma"), name=name, note="a throwaway lemma")
    monkeypatch.setattr(registry, "ALL", registry.ALL + (bound,))
    monkeypatch.setitem(registry._BY_NAME, name, bound)
    # step 2: its derivation, returned by package_derivations()
    proof = dataclasses.replace(get_derivation("kovalev_lemma_implied"), name="dummy_lemma", bound=name)
    before = proofs.package_derivations
    monkeypatch.setattr(proofs, "package_derivations", lambda: before() + [proof])

    # step 3: its example, a function of theory.examples.bounds named as the bound
    def dummy_sync_lemma(regime="far", **changes):
        """>>> b, m = dummy_sync_lemma()"""
        return examples.bound_and_measured(name, regime, **changes)
    def without_example():    # tests/theory/test_bound_doctests.py's rule: a function named as the bound, run
        return [n for n in theory.names() if f">>> b, m = {n}(" not in (getattr(examples, n, None).__doc__ or "")]
    assert without_example() == [name]                                        # the example is missing
    monkeypatch.setattr(examples, name, dummy_sync_lemma, raising=False)
    assert without_example() == []

    assert name in theory.names() and get_derivation("dummy_lemma").bound == name    # the listing
    assert chain_check(get_derivation("dummy_lemma")).ok
    b, m = dummy_sync_lemma()
    assert b >= m
    assert main(["--bound", name]) == 0                                       # python -m theory --bound
    out = capsys.readouterr().out
    assert out.startswith(f"{name}: momentum_error_x <= ") and "chain: ok" in out

    monkeypatch.undo()
    assert name not in theory.names() and not hasattr(examples, name)
    assert main(["--bound", name]) == 2
