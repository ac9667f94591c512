"""One call that runs every check of the theory package, and the proof as text.

``check()`` returns {"ok", "steps", "chains", "premises", "structure", "limits", "mutants",
"grid"}. ok is True only when every derivation step passes alone (theory.check; a premise
between closed forms must be proved), every chain assembles its bound (theory.chain), every
premise holds on the whole witness grid (theory.witnesses, theory.witness_grid), every
theorem cites the lemma it uses (structure), every limit identity holds (theory.limits: eta ->
0, r = 0, mu = 1) and every planted mutant makes check() itself fail (theory.mutation).

``check(derivations=..., bounds=..., sim=..., mutants=False)`` runs the same checks on a
planted world: a set of derivations, {name: expr} overrides of the registered bounds and a
premise simulator (theory.premises.simulate); theory.mutation plants each mutant that way.
"""
from __future__ import annotations

import functools


@functools.lru_cache(maxsize=None)
def _step_ok(step, n: int, seed: int, cited):
    """step.check, cached on the step itself (and the expression it cites, if overridden)."""
    bounds = {step.cites: cited} if cited is not None else None
    return step.check(n=n, seed=seed, bounds=bounds).ok


def theorem_citations(derivations) -> dict:
    """{theorem derivation: the bounds its chain cites}. A theorem (a bound on an average of
    gradient norms) must use its lemma by citing it, not by restating it as a premise."""
    from .registry import get
    out = {}
    for d in derivations:
        if d.proves and get(d.bound).quantity.startswith("avg_grad_norm"):
            out[d.name] = [s.cites for s in d.steps if s.chain and s.cites]
    return out


def check(n: int = 1500, derivations=None, bounds=None, sim=None, mutants: bool = True) -> dict:
    """Run every check of the package, or of a planted world (see the module docstring)."""
    from .chain import chain_all
    from .limits import limit_checks
    from .proofs import all_derivations
    from .witness_grid import coverage
    from .witnesses import all_witnesses
    ders = all_derivations() if derivations is None else list(derivations)
    bmap = dict(bounds or {})
    steps = [(d.name, s.name, _step_ok(s, n, i, bmap.get(s.cites) if s.cites else None))
             for d in ders for i, s in enumerate(d.steps)]
    chains = [c.as_dict() for c in chain_all(ders, bmap)]
    prem = all_witnesses(ders, sim=sim)
    cites = theorem_citations(ders)
    structure = {f"{name} cites a bound": bool(c) for name, c in cites.items()}
    limits = {k: bool(v) for k, v in limit_checks(bmap).items()}
    out = {"steps": steps, "chains": chains, "premises": prem, "structure": structure, "limits": limits}
    failed = failed_sections(out)
    if mutants:
        from .mutation import mutation_table
        out["mutants"] = mutation_table(n)
        if not all(m["caught"] for m in out["mutants"]):
            failed.append("mutants")
    out["grid"] = coverage()
    out["failed"] = failed
    out["ok"] = not failed
    return out


def failed_sections(out: dict) -> list[str]:
    """The sections of a check() result with a failure."""
    bad = []
    if not all(x[2] for x in out["steps"]):
        bad.append("steps")
    if not all(c["ok"] for c in out["chains"]):
        bad.append("chains")
    if not all(w["ok"] for w in out["premises"].values()):
        bad.append("premises")
    if not all(out["structure"].values()):
        bad.append("structure")
    if not all(out["limits"].values()):
        bad.append("limits")
    return bad


def proof_text(all_derivations: bool = True) -> str:
    """The numbered proof with each step's check (python -m theory [--all])."""
    from .proofs import all_derivations as every
    from .proof_text import delayed_proof, render_text
    return render_text(every() if all_derivations else delayed_proof())


def proof_markdown() -> str:
    """docs/proof.md: every derivation as GitHub markdown with LaTeX, then the implication
    table of the paper's readings C1-C4 (theory.implications)."""
    from .proofs import all_derivations
    import sympy as sp
    from .implications import VARIANTS, c4_ranges, implication
    from .paper_readings import READINGS
    from .proof_text import render_markdown
    text = render_markdown(all_derivations(), title="Delayed LMO momentum: the machine-checked proofs")
    rows = ["## The readings of the paper's delayed bound, implied or not", "",
            "Readings (theory.paper_readings): " + "; ".join(f"**{k}**: {v}" for k, v in READINGS.items()) + ".",
            "", "Does the package's derived lemma for the variant imply the reading, for every"
            " $\\mu \\in (0, 1]$ and all positive constants? (proved in sympy; otherwise the exact"
            " counterexample region, with $a = \\sqrt{\\mu}\\rho\\sigma$). The noise term alone"
            " (not a bound by itself) is in `python -m theory --json`.", "",
            "| reading | " + " | ".join(VARIANTS) + " |", "|---|" + "---|" * len(VARIANTS)]
    for r in ("paper_c1_y", "paper_c2_y", "paper_c3_y", "paper_c4_y",
              "paper_c1_x", "paper_c2_x", "paper_c3_x", "paper_c4_x"):
        cells = []
        for v in VARIANTS:
            i = implication(r, v)
            cells.append(i.status if i.status != "not implied" else
                         f"not implied: `{i.region}`" + (f"; **{i.note}**" if i.note else ""))
        rows.append(f"| `{r}` | " + " | ".join(cells) + " |")
    c4 = c4_ranges()
    rows += ["", f"**C4 at $y_t$, exactly** (fixed units of f and x): it is not implied by the delayed lemma"
             f" iff ${sp.latex(c4['not_implied'])}$ (the discriminant ${sp.latex(c4['discriminant'])}$ of the"
             " region is positive), and it is false, below the value $L\\eta/\\mu$ that a delayed run"
             " attains at $\\sigma = 0$ far from the minimiser, iff"
             f" ${sp.latex(c4['false'])}$ (the gap at $\\sigma = 0$ is ${sp.latex(c4['gap_at_sigma_0'])}$)."
             " For $4 < L \\le 8$ it is only not implied: whether a run exceeds it there is not settled.",
             "", "The EF-trajectory cells of C1 and C2 are not implied only for $r_w$ above a threshold"
             " that is at least $2\\eta$; EF's own runs have $r_t \\le 2\\eta$, so those regions are"
             " unreachable (each cell says so, proved in sympy)."]
    return text + "\n".join(rows) + "\n"
