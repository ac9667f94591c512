"""The delayed lemma, read from its statement to its checks (run: python -m theory.examples.delayed_lemma).

Statement (records): with the delayed update y_t = x_t + d_{t-1}, ||d_t|| <= eta,

    E ||m_t - grad f(y_t)||_*  <=  (1-mu)^t rho sigma + sqrt(mu) rho sigma + L eta / mu.

Derivation (proofs): cite the perturbed lemma, E||m_t - grad f(y_t)||_* <= noise(t) + L eta (1-mu)/mu
+ L r_w(t), proved for any perturbation r_t = ||y_t - x_t||; the delayed update has r_t <= eta, so
r_w <= eta (a premise); the right side increases in r_w; simplify: L eta (1-mu)/mu + L eta = L eta/mu.

Checks (checks): every step alone (algebra in sympy; a citation against the registry; a premise
cited), the chain (the steps assembled, following the citation into the perturbed lemma's own
chain, give exactly the registered expression), the premise r_w <= eta evaluated on exact runs
of the delayed recursion, and a planted error (the drift L eta/(2 mu)) that the chain must reject.
"""
from __future__ import annotations

import argparse

import sympy as sp

from ..checks.chain import chain_check
from ..checks.step import check_derivation
from ..checks.witnesses import witness_premise
from ..proofs.registry import get_derivation
from ..records.registry import get
from ..records.symbols import L, eta, mu

BOUND = "derived_delayed_lemma"
DERIVATION = "delayed_lemma"


def statement() -> str:
    """The bound as registered: ``quantity <= expr``, its variant and assumptions."""
    b = get(BOUND)
    return (f"{b.name}: {b.quantity} <= {sp.sstr(b.expr)}\n"
            f"  variant {b.variant}; assumptions {', '.join(b.assumptions)}; {b.note}")


def steps() -> list[dict]:
    """Each step of the derivation with its own check (theory.checks.step.check_derivation)."""
    d = get_derivation(DERIVATION)
    return [{"step": s.name, "claim": f"{sp.sstr(s.lhs)} {s.rel} {sp.sstr(s.rhs)}", "reason": s.reason,
             "ok": r.ok, "check": r.status} for s, r in check_derivation(d)]


def checks() -> dict:
    """The chain, the premise witnesses of the step's own premises, and a planted error."""
    d = get_derivation(DERIVATION)
    chain = chain_check(d)
    premises = {s.name: witness_premise(d, s) for s in d.steps if s.kind == "premise" and not s.cites}
    planted = chain_check(d, bound_expr=get(BOUND).expr - L * eta / mu + L * eta / (2 * mu))
    return {"chain": chain.ok, "chain_detail": chain.detail,
            "premises": {k: w["ok"] for k, w in premises.items()},
            "premise_samples": {k: w["samples"] for k, w in premises.items()},
            "planted_drift_rejected": not planted.ok}


def run() -> dict:
    """Statement, steps and checks; ``ok`` when every step, the chain and the premises hold and
    the planted error is rejected."""
    st, c = steps(), checks()
    ok = all(s["ok"] for s in st) and c["chain"] and all(c["premises"].values()) and c["planted_drift_rejected"]
    return {"statement": statement(), "steps": st, "checks": c, "ok": ok}


def main(argv=None) -> int:
    """Print statement, steps and checks; exit status 0 when ``ok``."""
    argparse.ArgumentParser(prog="python -m theory.examples.delayed_lemma", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    out = run()
    print(out["statement"] + "\n\nderivation:")
    for i, s in enumerate(out["steps"], 1):
        print(f"  ({i}) {s['step']}: {s['claim']}\n      because {s['reason']}\n      check: {s['check']}")
    c = out["checks"]
    print(f"\nchain: {'ok' if c['chain'] else 'FAILS'} ({c['chain_detail']})")
    for k, v in c["premises"].items():
        print(f"premise on exact runs: {k}: {'holds' if v else 'FAILS'} ({c['premise_samples'][k]} samples)")
    print(f"planted drift L eta/(2 mu) rejected by the chain: {c['planted_drift_rejected']}")
    print(f"\nok: {out['ok']}")
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
