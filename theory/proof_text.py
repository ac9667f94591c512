"""Render derivations as numbered steps (plain text or GitHub markdown with LaTeX)."""
from __future__ import annotations

import sympy as sp

from .derivation import Derivation, get_derivation
from .registry import get

DELAYED_PROOF = ("perturbed_lemma", "delayed_lemma", "perturbed_theorem", "delayed_theorem")
_REL_TEX = {"==": "=", "<=": r"\le"}


def _plain(e) -> str:
    return sp.sstr(sp.sympify(e))


def _tex(e) -> str:
    return sp.latex(sp.sympify(e))


def render_text(derivations, checks=None) -> str:
    """Numbered plain-text proof; checks: {(dname, i): CheckResult} (computed if None)."""
    lines, n = [], 0
    for d in derivations:
        b = get(d.bound)
        lines.append(f"== {d.name}: {d.statement}")
        lines.append(f"   proves {b.name} ({b.quantity}, {b.variant}; assumptions {', '.join(b.assumptions)})")
        for i, s in enumerate(d.steps):
            n += 1
            res = (checks or {}).get((d.name, i)) or s.check()
            lines.append(f"{n:3d}. [{s.name}]  {_plain(s.lhs)}  {s.rel}  {_plain(s.rhs)}")
            lines.append(f"     because: {s.reason}")
            if s.where:
                lines.append("     under: " + ", ".join(f"{_plain(k)} = {_plain(v)}" for k, v in s.where))
            lines.append(f"     check: {res.status}")
        lines.append(f"   => {b.name}:  {b.quantity} <= {_plain(b.expr)}")
        lines.append("")
    return "\n".join(lines)


def render_markdown(derivations, checks=None, title="Delayed LMO momentum: machine-checked proof") -> str:
    """GitHub markdown with $...$ math, one numbered list per derivation."""
    out = [f"# {title}", "",
           "Notation of docs/design.md. *premise* steps cite an assumption or a textbook"
           " inequality; *algebra* steps are checked by `theory.check` (symbolic, or numeric with"
           " the worst margin).", ""]
    for d in derivations:
        b = get(d.bound)
        out += [f"## {d.name}", "", f"Proves `{b.name}` ({b.quantity}, variant {b.variant},"
                f" assumptions {', '.join(b.assumptions)}):", "", f"$$ {_tex(b.expr)} $$", ""]
        for i, s in enumerate(d.steps):
            res = (checks or {}).get((d.name, i)) or s.check()
            out.append(f"{i + 1}. **{s.name}** ({s.kind}): ${_tex(s.lhs)} {_REL_TEX[s.rel]} {_tex(s.rhs)}$  ")
            out.append(f"   because {s.reason}.  ")
            if s.where:
                out.append("   under " + ", ".join(f"${_tex(k)} = {_tex(v)}$" for k, v in s.where) + ".  ")
            out.append(f"   check: `{res.status}`")
        out.append("")
    return "\n".join(out)


def delayed_proof() -> list[Derivation]:
    """The derivations that together prove derived_delayed_theorem."""
    return [get_derivation(n) for n in DELAYED_PROOF]
