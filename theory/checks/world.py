"""Every check of the theory package run on one world, without the mutation table.

A world is a set of derivations, {name: expr} overrides of the registered bounds and a premise
simulator (default: the package's derivations and bounds, theory.checks.witness_runs.simulate).
``check_world()`` returns {"steps", "chains", "premises", "structure", "limits", "bounds", "grid",
"certificates", "errors", "failed", "ok"}; "certificates" is theory.checks.certificates.audit
(the PEPs' point relations replayed against a run, a few cells re-solved with PEPit when installed,
no lemma below a stored certificate); "bounds" confronts every registered bound, derived or not, with runs
(theory.checks.confront: its status 'derived', 'not refuted', 'unchecked' or 'refuted'); "premises" is keyed by premise id ('<derivation>: <step>',
theory.proofs.derivation.premise_id: step names repeat across derivations, ids do not). It never raises
on a malformed world (a theorem citing nothing, an unknown citation, two derivations of one name,
no derivation at all): what cannot be computed fails its section and "errors" says why. ok is
True only when every derivation step passes alone (theory.checks.step; a
premise between closed forms must be proved), every chain assembles its bound (theory.checks.chain),
every premise holds on the whole witness grid (theory.checks.witnesses, theory.checks.witness_grid), every
theorem cites the lemma it uses (structure), no bound registered valid is refuted by runs (bounds)
and every limit identity holds (theory.checks.limit_identities: eta
-> 0, r = 0, mu = 1).

theory.checks.mutation plants each mutant as a world and runs check_world on it; theory.checks.full's
``check()`` (``theory.check()``) runs the package's own world and the mutation table.
"""
from __future__ import annotations

import functools

from .step import check_proof_step


@functools.lru_cache(maxsize=None)
def _step_ok(step, n: int, seed: int, cited):
    """check_proof_step, cached on the step itself (and the expression it cites, if overridden)."""
    bounds = {step.cites: cited} if cited is not None else None
    return check_proof_step(step, n=n, seed=seed, bounds=bounds).ok


def theorem_citations(derivations) -> dict:
    """{theorem derivation: the bounds its chain cites}. A theorem (a bound on an average of
    gradient norms) must use its lemma by citing it, not by restating it as a premise."""
    from ..records.registry import get
    out = {}
    for d in derivations:
        if d.proves and get(d.bound).quantity.startswith("avg_grad_norm"):
            out[d.name] = [s.cites for s in d.steps if s.chain and s.cites]
    return out


def check_world(n: int = 1500, derivations=None, bounds=None, sim=None, certificates: bool = True) -> dict:
    """Run every check on a world (see the module docstring); None means the package's own.
    ``certificates=False`` (the mutation table's planted worlds) keeps of the certificate audit only
    the comparison of the stored certificates with the world's lemmas (no replay, no PEPit re-solve)
    and confronts only the bounds the world overrides (the others are confronted in the package's own
    world).
    Never raises on a malformed world: a section that cannot be computed fails, and "errors"
    says why ({section: reason})."""
    from .chain import chain_all
    from .confront import confront_all
    from ..proofs.derivation import duplicate_ids
    from ..proofs.registry import all_derivations
    from .limit_identities import limit_checks
    from .witness_grid import coverage
    from .witnesses import all_witnesses
    ders = all_derivations() if derivations is None else list(derivations)
    bmap = dict(bounds or {})
    errors = {}

    def guard(section, fn, failed):
        try:
            return fn()
        except Exception as e:  # noqa: BLE001  (a malformed world is a failed check, not a crash)
            errors[section] = f"{type(e).__name__}: {e}"[:300]
            return failed

    def step_rows():
        return [(d.name, s.name, guard(f"step {d.name}: {s.name}", lambda: _step_ok(
            s, n, i, bmap.get(s.cites) if s.cites else None), False)) for d in ders for i, s in enumerate(d.steps)]

    steps = guard("steps", step_rows, [("?", "?", False)])
    chains = guard("chains", lambda: [c.as_dict() for c in chain_all(ders, bmap)], [{"ok": False}])
    prem = guard("premises", lambda: all_witnesses(ders, sim=sim), {"?": {"ok": False}})
    cites = guard("structure", lambda: theorem_citations(ders), {"?": []})
    structure = {f"{name} cites a bound": bool(c) for name, c in cites.items()}
    structure["the world has a derivation"] = bool(ders)
    dup = guard("structure", lambda: duplicate_ids(ders), ["?"])
    structure["every premise id is unique"] = not dup
    if dup:
        errors.setdefault("structure", f"premise ids shared by two different steps: {dup}")
    limits = guard("limits", lambda: {k: bool(v) for k, v in limit_checks(bmap).items()}, {"?": False})
    from .certificates.audit import audit
    certs = guard("certificates", lambda: audit(bmap, replay=certificates, resolve=certificates, sim=sim),
                  {"ok": False})
    bounds_ = guard("bounds", lambda: confront_all(ders, bmap, sim, only_overridden=not certificates), {"?": {"ok": False, "status": "unchecked"}})
    out = {"steps": steps, "chains": chains, "premises": prem, "structure": structure, "limits": limits,
           "bounds": bounds_, "certificates": certs}
    failed = failed_sections(out)
    out["grid"] = coverage()
    out["errors"] = errors
    out["failed"] = failed
    out["ok"] = not failed and not errors
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
    if "bounds" in out and not all(b["ok"] for b in out["bounds"].values()):
        bad.append("bounds")
    if "certificates" in out and not out["certificates"]["ok"]:
        bad.append("certificates")
    return bad
