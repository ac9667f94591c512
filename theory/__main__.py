"""python -m theory: print the machine-checked proof of the delayed theorem, or the registry.

  python -m theory                 proof of derived_delayed_theorem, numbered, with check status
  python -m theory --markdown F    the same proof as GitHub markdown with LaTeX, written to F
  python -m theory --json          registry, every derivation step's check, scaling, limits,
                                   Kovalev recheck and delay prices, as one JSON object
  python -m theory --bound NAME    one bound: formula, assumptions, provenance, its checks
  python -m theory --all           every derivation (not only the delayed theorem)
  python -m theory --slack-figure F  PNG of reading C2's slack against the sharper bounds

--json holds: bounds (paper_* with their reading), derivations (every step's check), chains
(theory.checks.chain), implications (reading x variant, theory.results.implications), mutants
(planted errors and which check caught them, theory.checks.mutation), premise_witnesses
(instances and sample counts, theory.checks.witnesses), slack (theory.results.slack), limits,
rates. The modules are in four subpackages: theory.records, theory.proofs, theory.checks,
theory.results.
"""
from __future__ import annotations

import argparse
import json
import sys

import sympy as sp


def _bound_dict(b):
    from .results.scaling import scaling_check
    sc = scaling_check(b)
    return {"name": b.name, "expr": sp.sstr(b.expr), "latex": sp.latex(b.expr), "quantity": b.quantity,
            "variant": b.variant, "assumptions": list(b.assumptions), "source": b.source,
            "status": b.status, "valid": b.valid, "symbols": list(b.symbols), "note": b.note,
            "reading": b.reading, "scaling_ok": sc.ok, "dimension": sc.dimension}


def _derivation_dict(d):
    from .checks.chain import chain_check
    from .checks.step import check_derivation
    return {"name": d.name, "bound": d.bound, "statement": d.statement, "proves": d.proves,
            "chain": chain_check(d).as_dict(),
            "steps": [{"name": s.name, "kind": s.kind, "lhs": sp.sstr(s.lhs), "rel": s.rel,
                       "rhs": sp.sstr(s.rhs), "reason": s.reason, "ok": r.ok, "method": r.method,
                       "status": r.status} for s, r in check_derivation(d)]}


def to_json(progress=None) -> dict:
    """Everything machine-readable (see module docstring)."""
    from .records import bound
    from .results import rates
    from .proofs.registry import all_derivations
    from .checks.limit_identities import limit_checks
    from .results.limits import compare_on_grid, delay_penalty
    from .records.registry import all_bounds
    say = progress or (lambda msg: None)
    say("registry + scaling")
    out = {"bounds": [_bound_dict(b) for b in all_bounds()]}
    say("derivations")
    out["derivations"] = [_derivation_dict(d) for d in all_derivations()]
    say("premise witnesses (each premise step's own expressions on exact instances)")
    from .checks.witnesses import all_witnesses
    out["premise_witnesses"] = all_witnesses()
    say("implication table (reading x variant)")
    from .results.implications import implication_table
    out["implications"] = [i.as_dict() for i in implication_table()]
    say("mutation table")
    from .checks.mutation import mutation_table
    out["mutants"] = mutation_table()
    say("slack of C2")
    from .results.slack import limits as slack_limits
    from .results.slack import slack_grid
    out["slack"] = {"grid": slack_grid(), "limits": slack_limits()}
    say("limits")
    out["limits"] = {k: bool(v) for k, v in limit_checks().items()}
    out["delay_penalty"] = {k: sp.sstr(v) for k, v in delay_penalty().items()}
    g = compare_on_grid()
    out["paper_vs_derived_grid"] = {k: g[k] for k in ("frac_derived_tighter", "min_ratio", "argmin", "max_ratio")}
    say("Kovalev recheck")
    out["kovalev_recheck"] = {
        v: {reg: {"sup_T_over_eps": sp.sstr(d["sup_T_over_eps"]), "K": sp.sstr(d["K"])}
            for reg, d in rates.kovalev_recheck(v).items()} for v in ("kovalev",) + bound.VARIANTS}
    say("rates and delay price (L = sigma = rho = Delta_0 = 1)")
    Ks = [1e3, 1e4, 1e6, 1e8, 1e10]
    out["delay_price"] = {"K": Ks, "delayed": rates.delay_price(Ks).tolist(),
                          "ef_worst": rates.delay_price(Ks, variant=bound.EF).tolist(),
                          "delayed_leading": rates.delay_price_leading(Ks).tolist()}
    epss = [0.5, 0.1, 0.02]
    out["steps_ratio"] = {"eps": epss, "delayed": rates.steps_ratio(epss).tolist(),
                          "ef_worst": rates.steps_ratio(epss, variant=bound.EF).tolist()}
    lo = rates.leading_order()
    out["leading_order"] = {k: sp.sstr(v) for k, v in lo.items()}
    return out


def show_bound(name: str) -> str:
    """Text block for one bound with its derivation checks."""
    from .proofs.registry import all_derivations
    from .results.render import render_text
    from .records.registry import get
    b = get(name)
    d = _bound_dict(b)
    lines = [f"{b.name}: {b.quantity} <= {d['expr']}",
             f"  variant {b.variant}; assumptions {', '.join(b.assumptions)}; status {b.status}; valid {b.valid}",
             f"  source: {b.source}", f"  note: {b.note}"]
    if b.reading:
        lines.append(f"  reading: {b.reading}")
    lines += [
              f"  scaling f->cf, x->sx: {'ok' if d['scaling_ok'] else 'FAILS'}; dimension {d['dimension']}", ""]
    ders = [x for x in all_derivations() if x.bound == name]
    lines.append(render_text(ders) if ders else "  (no derivation: a transmitted/restated statement)")
    return "\n".join(lines)


class _Help(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The module docstring as written, and every option's default."""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m theory", description=__doc__, formatter_class=_Help)
    p.add_argument("--markdown", metavar="FILE", default=None,
                   help="write the delayed proof as markdown+LaTeX to FILE (docs/proof.md: with --all)")
    p.add_argument("--json", action="store_true", help="print registry and all checks as JSON")
    p.add_argument("--bound", metavar="NAME", default=None, help="show one registered bound and its checks")
    p.add_argument("--all", action="store_true", help="print every derivation, not only the delayed theorem")
    p.add_argument("--slack-figure", metavar="FILE", default=None, help="write the C2 slack figure (PNG)")
    a = p.parse_args(argv)
    from .records.registry import names
    if a.bound and a.bound not in names():
        print(f"python -m theory: error: --bound: no bound named {a.bound!r}; valid names:\n  "
              + "\n  ".join(names()), file=sys.stderr)
        return 2
    if a.slack_figure:
        from .results.slack import plot_slack
        try:
            print(f"wrote {plot_slack(a.slack_figure)}")
        except OSError as e:
            print(f"python -m theory: error: --slack-figure: cannot write {a.slack_figure}: {e}", file=sys.stderr)
            return 2
        return 0
    from .proofs.registry import all_derivations
    from .results.render import delayed_proof, proof_markdown, render_markdown, render_text
    if a.json:
        json.dump(to_json(lambda m: print(f"[theory] {m}", file=sys.stderr)), sys.stdout, indent=1)
        print()
        return 0
    if a.bound:
        print(show_bound(a.bound))
        return 0
    ders = all_derivations() if a.all else delayed_proof()
    if a.markdown:
        try:
            with open(a.markdown, "w") as fh:
                fh.write(proof_markdown() if a.all else render_markdown(ders))
        except OSError as e:
            print(f"python -m theory: error: --markdown: cannot write {a.markdown}: {e}", file=sys.stderr)
            return 2
        print(f"wrote {a.markdown}")
        return 0
    print(render_text(ders))
    return 0


if __name__ == "__main__":
    sys.exit(main())
