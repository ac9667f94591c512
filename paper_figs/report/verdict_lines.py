"""Verdict lines short enough for REPORT.md's front page, and its summary of verdicts grouped by
status and by claim. A front-page line says the claim, the estimate with its 95 % interval and
unit, n and the status in at most LINE_MAX characters; the statistics behind it (p values, pools,
dof, seeds to resolve) stay on the figure's own page, which every line links to."""
from __future__ import annotations

import math
import re

from ..statistics.protocol import CLAIMS_BY_ID, FAMILY
from ..statistics.t_tests import FAILS, HOLDS, INCONCLUSIVE

#: the longest verdict line of the front page, its link included (issue 51 item 1)
LINE_MAX = 300
STATUSES = (HOLDS, FAILS, INCONCLUSIVE)


def page_link(name: str, anchor: str = "") -> str:
    """The front page's link to a figure's page (``figures/NAME.md``), at ``anchor`` if given."""
    return f"figures/{name}.md" + (f"#{anchor}" if anchor else "")


def line_anchor(i: int) -> str:
    """The anchor of a figure page's ``i``-th verdict line (0-based)."""
    return f"v{i + 1}"


def role(v) -> str:
    """'confirmatory C3' for a line of the family, else 'exploratory' (docs/protocol.md §4)."""
    return f"confirmatory {v.claim}" if getattr(v, "claim", "") else "exploratory"


def unit(test) -> str:
    """The unit of a line's estimate: a relative gap is a fraction of the sync loss; every other
    estimate is a difference of final losses."""
    return "(fraction of the sync loss)" if "relative" in (test.label or "").lower() else "nats/byte"


def estimate_text(v) -> str:
    """'+0.0592 [+0.0439, +0.0746] nats/byte, n=4'; for a claim of parts how many hold; for a
    rule without an estimate, that it has none."""
    t = v.test
    if t is None:
        return "no estimate (a rule's reading)"
    if t.parts:
        held = sum(p.status == HOLDS for p in t.parts)
        failed = sum(p.status == FAILS for p in t.parts)
        return f"{held} of {len(t.parts)} parts hold, {failed} fail"
    if not math.isfinite(t.est):
        return "no estimate"
    if not math.isfinite(t.lo):
        return f"{t.est:+.4f} {unit(t)}, n={t.n}, no standard error"
    return f"{t.est:+.4f} [{t.lo:+.4f}, {t.hi:+.4f}] {unit(t)}, n={t.n}"


def without_parentheses(name: str) -> str:
    """``name`` less its parenthesised asides (the detail the figure's page keeps)."""
    prev = None
    while prev != name:
        prev, name = name, re.sub(r"\s*\([^()]*\)", "", name)
    return name.strip()


def short_line(name: str, v, link: str) -> str:
    """One front-page line: '[C1] name: estimate: **status** ([detail](link))', at most LINE_MAX
    characters: a name too long loses its parenthesised asides, then its words past the budget
    (the whole line is on the page ``link`` points to)."""
    tag = v.claim or "exploratory"
    tail = f": {estimate_text(v)}: **{v.status}** ([whole line]({link}))"
    head = f"[{tag}] "
    if len(head) + len(name) + len(tail) > LINE_MAX:
        name = without_parentheses(name)
    room = LINE_MAX - len(head) - len(tail)
    if len(name) > room:
        words, kept = name.split(), ""
        for w in words:
            if len(kept) + len(w) + 1 > room - 12:
                break
            kept = f"{kept} {w}".strip()
        name = f"{kept} (in short)"
    return head + name + tail


def _lines(outputs) -> list[tuple]:
    """(figure name, line index, line name, verdict) of every verdict line of every figure."""
    return [(o.name, i, k, v) for o in outputs for i, (k, v) in enumerate(o.verdicts.items())]


def summary(outputs) -> list[str]:
    """The summary of verdicts: per status, the confirmatory claims (each claim's lines across
    figures together, linked) and then the exploratory lines (named and linked when decided,
    counted per figure when inconclusive)."""
    lines = _lines(outputs)
    count = {s: sum(v.status == s for *_, v in lines) for s in STATUSES}
    L = [f"{len(lines)} verdict lines over {len({f for f, *_ in lines})} figures: {count[HOLDS]} hold, "
         f"{count[FAILS]} do not hold, {count[INCONCLUSIVE]} inconclusive. A confirmatory claim tested by "
         "lines of two figures (on the same runs, counted once) is one entry; each entry links to the line "
         "on its figure's page.", ""]
    for status in STATUSES:
        mine = [x for x in lines if x[3].status == status]
        L += [f"### {status.capitalize()} ({len(mine)} lines)", ""]
        if not mine:
            L += ["None.", ""]
            continue
        for c in FAMILY:
            at = [x for x in mine if x[3].claim == c.id]
            if at:
                links = ", ".join(f"[{f}]({page_link(f, line_anchor(i))})" for f, i, _, _ in at)
                L.append(f"- **{c.id}** {CLAIMS_BY_ID[c.id].paper}: {links}")
        exploratory = [x for x in mine if not x[3].claim]
        figures = list(dict.fromkeys(f for f, *_ in exploratory))
        for f in figures:
            here = [x for x in exploratory if x[0] == f]
            if status == INCONCLUSIVE:
                L.append(f"- exploratory, [{f}]({page_link(f, 'verdicts')}): {len(here)} line(s)")
            else:
                names = "; ".join(f"[{without_parentheses(k)}]({page_link(f, line_anchor(i))})" for _, i, k, _ in here)
                L.append(f"- exploratory, {f}: {names}")
        L.append("")
    return L


def decided(o) -> list[str]:
    """A figure's decided lines (holds / does not hold) as front-page lines, each linked to its page."""
    return [f"- {short_line(k, v, page_link(o.name, line_anchor(i)))}"
            for i, (k, v) in enumerate(o.verdicts.items()) if v.status in (HOLDS, FAILS)]
