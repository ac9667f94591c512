"""Render derivations as numbered steps (plain text or GitHub markdown with LaTeX): `proof_text`
(``theory.proof_text()``, ``python -m theory``) and `proof_markdown` (docs/proof.md, with the
implication table of the paper's readings).

Every symbol is defined in GLOSSARY; each derivation carries a lemma title in the structure of
the paper's appendix ("Delayed Stochastic Non-Euclidean Trust-Region Theory"; the numbering is
this package's: the summary does not give the paper's); every step is
marked "proved (sympy)", "checked numerically (N samples)", "premise (cited; checked
numerically on N instances, M samples)" or "cites <bound>" (theory.checks.witnesses, theory.checks.chain).
``python -m theory --all --markdown docs/proof.md`` writes the document a test keeps current.
"""
from __future__ import annotations

import re

import sympy as sp

from ..checks.step import check_proof_step
from ..proofs.derivation import Derivation
from ..proofs.registry import get_derivation
from ..records.registry import get

GLOSSARY = (
    ("x_t", "the iterate at step t, where the stochastic gradient is taken"),
    ("d_t", "the step eta lmo(m_t), ||d_t|| <= eta"),
    ("y_t", "the virtual iterate: x_t (sync), x_t + d_{t-1} (delayed), x_t + d_{t-1} - d_{t-2} (EF);"
            " y_{t+1} = y_t + d_t"),
    ("g_t, xi_t", "g_t = grad f(x_t) + xi_t, the stochastic gradient and its noise (A3)"),
    ("m_t", "the momentum m_t = (1-mu) m_{t-1} + mu g_t, m_0 = g_0"),
    ("w_{t,j}", "the momentum weights: m_t = sum_j w_{t,j} g_j, w_{t,0} = (1-mu)^t, w_{t,j} = mu (1-mu)^{t-j}"),
    ("k", "summation index: the age t - j of g_j in m_t"),
    ("E_t", "E||m_t - grad f(y_t)||_*, the momentum error at y_t"),
    ("E_x", "E||m_t - grad f(x_t)||_*, the momentum error at x_t"),
    ("N_t", "E||sum_j w_{t,j} xi_j||_*, the noise part of E_t"),
    ("D_t", "E||sum_j w_{t,j} grad f(x_j) - grad f(y_t)||_*, the drift part of E_t"),
    ("r_t", "||x_t - y_t||, the perturbation of the gradient point"),
    ("r_w", "r_w(t) = sum_j w_{t,j} E r_j"),
    ("r_avg", "(1/K) sum_{t<K} r_w(t)"),
    ("G, G_x", "(1/K) sum_{t<K} E||grad f(y_t)||_*, and the same at x_t"),
    ("v", "a side condition r <= c is encoded as r = c/(1+v) with v >= 0 (e.g. r_w = eta/(v+1))"),
    ("s_mu", "0 < mu < 1 is encoded as mu = 1/(1+s_mu), s_mu > 0 (mu = 1 checked separately)"),
    ("a, b, P", "a = sqrt(mu) rho sigma, b = 2 L eta, P = sqrt(2a^2 + 2b^2) (the paper's noise term, C1/C2)"),
    ("L, sigma, rho, eta, mu, Delta_0, K", "A2's smoothness, A3's noise level, A4's norm constant, the step"
     " size, the momentum weight in (0, 1], f(x_0) - f*, the horizon (docs/design.md §3)"),
)

#: lemma titles in the structure of the paper's appendix
TITLES = {
    "perturbed_lemma": "Lemma 1 (momentum error under a perturbed gradient point)",
    "perturbed_theorem": "Theorem 1 (convergence under a perturbed gradient point)",
    "sync_lemma": "Corollary 1.1 (synchronous momentum error)",
    "sync_theorem": "Corollary 1.2 (synchronous convergence)",
    "delayed_lemma": "Lemma 2 (delayed momentum error at y_t)",
    "delayed_theorem": "Theorem 2 (delayed convergence at y_t)",
    "delayed_lemma_x": "Lemma 2' (delayed momentum error at x_t)",
    "delayed_theorem_x": "Theorem 2' (delayed convergence at x_t)",
    "ef_lemma_worst": "Lemma 3 (error-feedback momentum error, worst case)",
    "ef_theorem_worst": "Theorem 3 (error-feedback convergence, worst case)",
    "kovalev_lemma_implied": "Remark (Kovalev's synchronous lemma follows)",
    "kovalev_theorem_implied": "Remark (Kovalev's synchronous theorem follows)",
    "paper_noise_term_alone": "Remark (the paper's noise term alone; not a bound)",
    "paper_c2": "Lemma 4 (the paper's delayed lemma, reading C2)",
    "paper_c1": "Corollary 4.1 (reading C1)",
    "paper_c2_x": "Corollary 4.2 (reading C2 at x_t)",
    "paper_c1_x": "Corollary 4.3 (reading C1 at x_t)",
}


def mark(step, res, derivation=None) -> str:
    """'proved (sympy)', 'checked numerically (N samples)', 'premise (...)' or 'cites ...'."""
    if not res.ok:
        return f"REJECTED ({res.detail})"
    if step.cites:
        return f"cites {step.cites} (its own chain is checked)"
    if step.kind == "premise":
        from ..checks.witnesses import witness, witness_premise
        w = witness(step) if derivation is None else witness_premise(derivation, step)
        state = "checked numerically" if w["ok"] else "FAILS numerically"
        return (f"premise (cited; {state} on {w['instances']} instances, {w['samples']} samples,"
                f" {w['mode']})")
    if res.method == "symbolic":
        return "proved (sympy)" + (" (a premise between closed forms)" if step.kind == "premise" else "")
    return f"checked numerically ({res.detail.split(',')[0]})"


def _chain_line(d) -> str:
    from ..checks.chain import chain_check
    c = chain_check(d)
    return ("chain: " + ("ok, " if c.ok else "BROKEN, ") + c.detail)

DELAYED_PROOF = ("perturbed_lemma", "delayed_lemma", "perturbed_theorem", "delayed_theorem")
_REL_TEX = {"==": "=", "<=": r"\le"}


def _plain(e) -> str:
    return sp.sstr(sp.sympify(e))


#: LaTeX of the abstract (random) quantities, named symbols rather than sympy's guess
TEX_NAMES = {
    "f(y_t)": "f(y_t)", "f(y_{t+1})": "f(y_{t+1})",
    "<grad f(y_t), lmo(m_t)>": r"\langle \nabla f(y_t), \operatorname{lmo}(m_t) \rangle",
    "||grad f(y_t)||_*": r"\|\nabla f(y_t)\|_*", "||m_t - grad f(y_t)||_*": r"\|m_t - \nabla f(y_t)\|_*",
    "(1/K) sum_t E_t": r"\frac{1}{K} \sum_{t<K} E_t", "||x_{t+1} - x_t||": r"\|x_{t+1} - x_t\|",
    "r_w": r"r_w(t)", "r_avg": r"r_{\mathrm{avg}}", "s_mu": r"s_{\mu}", "Delta_0": r"\Delta_0",
    "E_t": "E_t", "E_x": "E_x", "N_t": "N_t", "D_t": "D_t", "G_x": "G_x",
}
#: LaTeX of each bound's left-hand side (theory.records.bound.QUANTITIES)
QUANTITY_TEX = {
    "momentum_error_x": r"\mathbb{E}\|m_t - \nabla f(x_t)\|_*",
    "momentum_error_y": r"\mathbb{E}\|m_t - \nabla f(y_t)\|_*",
    "avg_grad_norm_x": r"\frac{1}{K} \sum_{t<K} \mathbb{E}\|\nabla f(x_t)\|_*",
    "avg_grad_norm_y": r"\frac{1}{K} \sum_{t<K} \mathbb{E}\|\nabla f(y_t)\|_*",
}


def _tex(e) -> str:
    """LaTeX of e with the named symbols; a number before a fraction gets an explicit \\cdot
    (``2 \\frac{1}{K}`` reads as the mixed number 2 1/K)."""
    e = sp.sympify(e)
    names = {s: TEX_NAMES[s.name] for s in e.free_symbols if s.name in TEX_NAMES}
    return re.sub(r"(\d) \\frac", r"\1 \\cdot \\frac", sp.latex(e, symbol_names=names))


def statement_tex(b) -> str:
    """The bound with its left-hand side: quantity <= expr."""
    return f"{QUANTITY_TEX[b.quantity]} \\le {_tex(b.expr)}"


def glossary_text() -> str:
    return "Symbols:\n" + "\n".join(f"  {k:12s} {v}" for k, v in GLOSSARY) + "\n"


def render_text(derivations, checks=None) -> str:
    """Numbered plain-text proof; checks: {(dname, i): CheckResult} (computed if None)."""
    lines, n = [glossary_text()], 0
    for d in derivations:
        b = get(d.bound)
        lines.append(f"== {TITLES.get(d.name, d.name)} [{d.name}]: {d.statement}")
        lines.append(f"   proves {b.name} ({b.quantity}, {b.variant}; assumptions {', '.join(b.assumptions)})")
        for i, s in enumerate(d.steps):
            n += 1
            res = (checks or {}).get((d.name, i)) or check_proof_step(s)
            lines.append(f"{n:3d}. [{s.name}]  {_plain(s.lhs)}  {s.rel}  {_plain(s.rhs)}")
            lines.append(f"     because: {s.reason}")
            if s.where:
                lines.append("     under: " + ", ".join(f"{_plain(k)} = {_plain(v)}" for k, v in s.where))
            lines.append(f"     check: {mark(s, res, d)}")
        lines.append(f"   => {b.name}:  {b.quantity} <= {_plain(b.expr)}")
        lines.append(f"   {_chain_line(d)}")
        lines.append("")
    return "\n".join(lines)


def render_markdown(derivations, checks=None, title="Delayed LMO momentum: machine-checked proof") -> str:
    """GitHub markdown with $...$ math, one numbered list per derivation."""
    out = [f"# {title}", "",
           "Generated by `python -m theory --all --markdown docs/proof.md`; a test regenerates it and"
           " compares. The lemmas follow the structure of the paper's appendix \"Delayed Stochastic"
           " Non-Euclidean Trust-Region Theory\" (a perturbed-gradient lemma, its delayed and"
           " error-feedback cases, the descent theorem); the numbering is this package's, since the"
           " summary does not give the paper's. Notation of docs/design.md. *premise* steps cite an assumption or a textbook"
           " inequality and are checked numerically on exact instances by evaluating the step's own"
           " formula (`theory.checks.witnesses`); *algebra* steps are proved by sympy or checked numerically"
           " (`theory.checks.step`); the *chain* line says whether the steps, assembled, give the bound"
           " (`theory.checks.chain`).", "", "## Symbols", ""]
    out += [f"- `{k}`: {v}" for k, v in GLOSSARY] + [""]
    for d in derivations:
        b = get(d.bound)
        out += [f"## {TITLES.get(d.name, d.name)}", "", f"Derivation `{d.name}`"
                + ("" if d.proves else " (an explanation, not a proof)") + f"; proves `{b.name}` ({b.quantity},"
                f" variant {b.variant}, assumptions {', '.join(b.assumptions)}):", "", f"$$ {statement_tex(b)} $$", ""]
        for i, s in enumerate(d.steps):
            res = (checks or {}).get((d.name, i)) or check_proof_step(s)
            out.append(f"{i + 1}. **{s.name}** ({'citation' if s.cites else s.kind}): ${_tex(s.lhs)} {_REL_TEX[s.rel]} {_tex(s.rhs)}$  ")
            out.append(f"   because {s.reason}.  ")
            if s.where:
                out.append("   under " + ", ".join(f"${_tex(k)} = {_tex(v)}$" for k, v in s.where) + ".  ")
            out.append(f"   check: {mark(s, res, d)}")
        out += ["", _chain_line(d), ""]
    return "\n".join(out)


def delayed_proof() -> list[Derivation]:
    """The derivations that together prove derived_delayed_theorem."""
    return [get_derivation(n) for n in DELAYED_PROOF]


def proof_text(all_derivations: bool = True) -> str:
    """The numbered proof with each step's check (python -m theory [--all])."""
    from ..proofs.registry import all_derivations as every
    return render_text(every() if all_derivations else delayed_proof())


def _note_md(note: str) -> str:
    """An implication note as markdown: its label in bold, its formulas (sympy's syntax) in code,
    never raw Python inside bold ('unreachable: the region needs r_w > X >= 2*eta (proved in
    sympy), but ...' -> '**unreachable**: the region needs `r_w > X >= 2*eta` (proved in sympy), ...')."""
    label, _, rest = note.partition(": ")
    if not rest:
        label, rest = "", note
    rest = re.sub(r"needs (.+?) \(proved in sympy\)", r"needs `\1` (proved in sympy)", rest)
    rest = re.sub(r"has (r_t <= 2\*eta), hence (r_w <= 2\*eta)", r"has `\1`, hence `\2`", rest)
    return (f"**{label}**: " if label else "") + rest


def proof_markdown() -> str:
    """docs/proof.md: every derivation as GitHub markdown with LaTeX, then the implication
    table of the paper's readings C1-C4 (theory.results.implications), the tightness table and
    the certified worst cases (theory.checks.certificates.table, from its stored values)."""
    from ..proofs.registry import all_derivations
    from .implications import VARIANTS, c4_ranges, implication
    from ..records.paper_readings import READINGS
    text = render_markdown(all_derivations(), title="Delayed LMO momentum: the machine-checked proofs")
    rows = ["## The readings of the paper's delayed bound, implied or not", "",
            "Readings (theory.records.paper_readings): "
            + "; ".join(f"**{k}**: {v}" for k, v in READINGS.items()) + ".",
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
                         f"not implied: `{i.region}`" + (f"; {_note_md(i.note)}" if i.note else ""))
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
    from .slack import tightness_markdown
    from ..checks.certificates.table import certificates_markdown
    from ..checks.certificates.tau_step import markdown as tau_markdown
    from ..checks.certificates.ef_joint import markdown as ef_joint_markdown
    return (text + "\n".join(rows) + "\n\n" + tightness_markdown() + "\n" + certificates_markdown() + "\n\n"
            + ef_joint_markdown() + "\n\n" + tau_markdown())
