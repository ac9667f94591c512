"""One call that runs every check of the theory package, and the proof as text.

``check()`` returns {"ok", "steps", "chains", "premises", "mutants"}: every derivation step
(theory.check), every chain (theory.chain), every premise witness (theory.witnesses) and every
planted mutant (theory.mutation) must pass or be caught for ok to be True.
"""
from __future__ import annotations


def check(n: int = 1500) -> dict:
    """Run every check of the package (see the module docstring)."""
    from .chain import chain_all
    from .proofs import all_derivations
    from .mutation import mutation_table
    from .witnesses import all_witnesses
    steps = [(d.name, s.name, r.ok) for d in all_derivations() for s, r in d.check(n=n)]
    chains = [c.as_dict() for c in chain_all()]
    prem = all_witnesses()
    mut = mutation_table(n)
    ok = (all(x[2] for x in steps) and all(c["ok"] for c in chains)
          and all(w["ok"] for w in prem.values()) and all(m["caught"] for m in mut))
    return {"ok": ok, "steps": steps, "chains": chains, "premises": prem, "mutants": mut}


def proof_text(all_derivations: bool = True) -> str:
    """The numbered proof with each step's check (python -m theory [--all])."""
    from .proofs import all_derivations as every
    from .proof_text import delayed_proof, render_text
    return render_text(every() if all_derivations else delayed_proof())


def proof_markdown() -> str:
    """docs/proof.md: every derivation as GitHub markdown with LaTeX, then the implication
    table of the paper's readings C1-C4 (theory.implications)."""
    from .proofs import all_derivations
    from .implications import VARIANTS, implication
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
            cells.append(i.status if i.status != "not implied" else f"not implied: `{i.region}`")
        rows.append(f"| `{r}` | " + " | ".join(cells) + " |")
    return text + "\n".join(rows) + "\n"
