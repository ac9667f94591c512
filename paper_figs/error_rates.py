"""The verdict engine's error rates, measured by simulation (docs/protocol.md §10):
``python -m paper_figs.error_rates``.

The whole engine runs on simulated final losses with the real design: the profile's grids
(the same cells, seeds and shared runs), the pooling rule applied to the simulated replicate
groups, the machine kinds of the kept records, every confirmatory claim's rule and Holm. Each
run's final loss is

    L(run) = mu(run) + e(run),   e ~ N(0, s^2 / 2)   (+ N(0, rms^2) for a run trained on another
                                                       machine kind than its setting's sync run)

so a paired difference of two runs has SD s, the seed SD the run's optimizer, model and lr
borrow in the kept records (the real pooling rule's choice), and a mixed pair adds its regime's
measured cross-machine variance, as the engine assumes. Two truths:

- ``null``: no true difference: every variant of a setting (sync, 2BW, EF, PipeDream, the
  mitigations) has one mean, the measured mean of the setting's sync runs. A decision on a
  superiority claim is then an error in either direction; an equivalence or non-inferiority
  claim is then true, and only 'does not hold' is an error. The family-wise false-positive
  rate is the fraction of replicates with at least one error.
- ``measured``: each run's mean is its cell's measured mean over seeds. A claim's true status
  is the engine's decision at vanishing noise (s x 1e-4); its power is the fraction of
  replicates that reach it.

The nulls (``NULLS``, ``--null``) vary the noise (uneven spreads, heavy tails, machine offsets) or,
``at_margin``, the means: the claims decided against a margin placed exactly at it; an error is
then judged against the engine's reading at vanishing noise (:func:`null_truths`). ``--plan``
measures the sequential plan's rate over all its looks (docs/plan.md §3): one draw per replicate
for every batch's runs (those not yet kept simulated from stand-in records of their cells), each
look judged on the runs through its batch and decided as the report decides it.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .report import confirmatory
from .statistics import machine_noise
from .records.deps import Deps
from lmo.variants import EF, SYNC, TWO_BW

from .figures import CATALOG, fig5, moe, table1
from .figures.grids import shared
from .figures.common import Context, figure_runs, lr_mult, replicate_gaps
from .records.identity import settings_identity
from .records.kept import KeptStore
from .statistics.machine_noise import same_kind
from .records.machine_regimes import machine_kind, regime_of
from .plan_state import batch_runs, completed
from .records.plan import BATCHES, through
from .records.profiles import get_profile
from .statistics.protocol import ALPHA, FAMILY, M_BENIGN, M_SMALLEST
from .records.runs import describe
from .statistics.seed_stats import noise_model
from .statistics.t_tests import FAILS, HOLDS, INCONCLUSIVE

#: claims tested against a margin (true under no difference: only 'does not hold' is an error there)
MARGIN_CLAIMS = ("C3", "C10", "C13", "C14", "C15")
VARIANT_FIELDS = ("mode", "ef", "stages", "sync_start", "sync_cooldown", "dc_asgd")


@dataclass
class SimOutcome:
    """What the figures read of a run (``runs.Outcome``'s surface): its key, settings, the
    kept record (provenance, curves) and a simulated final loss."""

    key: str
    settings: dict
    record: dict
    final: float
    ok: bool = True
    source: str = "kept"
    kept: Any = None
    error: str | None = None

    def curve(self, field_: str = "val_loss") -> tuple[list, list]:
        rows = [r for r in self.record["result"]["log"] if r.get(field_) is not None]
        return [r["step"] for r in rows], [float(r[field_]) for r in rows]


@dataclass
class SimRunner:
    """``runs.Runner``'s lookup surface over a dict of simulated outcomes."""

    keys: dict
    outcomes: dict = field(default_factory=dict)

    def key_of(self, settings) -> str:
        return self.keys[_sig(settings)]

    def run_all(self, settings_list, train: bool = False) -> list:
        return [self.outcomes.get(self.keys[_sig(s)]) or _missing(self.keys[_sig(s)], s) for s in settings_list]


def _missing(key: str, settings: dict) -> SimOutcome:
    """A run of the design with no kept record: missing, as in the report."""
    return SimOutcome(key, settings, {}, float("nan"), ok=False, error="no kept record (a planned run)")


def _sig(settings) -> str:
    """A settings dict's identity for the lookup (paper_figs.records.identity's rule: a diagnosed run and
    its plain twin are one; its items in key order, values as repr)."""
    return repr(sorted(settings_identity(settings).items()))


@dataclass
class Design:
    """The real design: every run the profile's figures read (key -> settings, kept record),
    the grids, and per run its null and measured means and its noise SD."""

    profile: Any
    runs: dict          # key -> (settings, kept record)
    keys: dict          # settings signature -> key
    grids: list
    mu: dict            # truth name -> {key: mean}
    sd: dict            # key -> SD of one run's final loss (s / sqrt 2)
    moved: dict         # key -> machine rms added (0 for a run on its setting's sync run's kind)
    synthetic: frozenset = frozenset()   # keys of the runs simulated from a stand-in record (no kept one)


def _setting(s: dict, drop=("seed",)) -> str:
    return _sig({k: v for k, v in s.items() if k not in drop})


def design(profile_name="full", kept: KeptStore | None = None, stand_ins: bool = False) -> Design:
    """The design of ``profile_name`` (a name, or a profile: e.g. the full profile through the
    plan's completed batches) from the kept records (a run without one is missing, as in the
    report: the runs ``paper_figs.planned_runs`` declares).

    ``stand_ins``: a run that is not in the profile as the plan found it (``get_profile(name)``: a
    plan batch's run, or any seed a caller adds) and has no kept record is simulated too, from a
    stand-in record: its cell's kept record of the lowest seed (curves), on the machine of the plan's
    kept runs where there are any (provenance), its means its cell's (``Design.synthetic`` lists
    them). The means and the seed SDs come from the kept records only. A run declared before the plan
    that a batch trains is the batch's: it is stood in too."""
    kept = kept or KeptStore()
    if isinstance(profile_name, str):
        p = get_profile(profile_name)
        if p.name in ("full", "quick"):   # through the plan's batches whose runs are all kept, as the figures
            p = through(p, completed(get_profile("full"), kept))
    else:
        p = profile_name
    deps = Deps()
    from .records.runs import Runner
    runner = Runner(deps, None, kept=kept)
    runs, keys, pending = {}, {}, {}
    grids = [CATALOG[n].grid(p) for n in CATALOG if p.runs_figure(n) and hasattr(CATALOG[n], "grid")]
    before = _sigs(get_profile(p.name)) if stand_ins else set()
    # a run the profile declared before the plan and a batch trains (Figure 6's 2BW seeds 1, 2 are
    # also planned_runs' small-model Figure 5 runs) is the batch's
    plan_keys = ({k for b in BATCHES for k in batch_runs(get_profile("full"), b.id)}
                 if stand_ins and p.name == "full" else set())
    for n in CATALOG:
        if not p.runs_figure(n):
            continue
        for s in figure_runs(CATALOG[n], p):
            sig = _sig(s)
            if sig in keys:
                continue
            k = runner.key_of(s)
            keys[sig] = k
            rec = kept.get(k)
            if rec is not None:   # a run without a record (planned_runs) is missing here as in the report
                runs[k] = (s, rec)
            elif stand_ins and (sig not in before or k in plan_keys):
                pending[k] = s
    final = {k: float(rec["result"]["final_val_loss"]) for k, (_, rec) in runs.items()}
    real = dict(runs)
    runs.update(_stand_ins(pending, real))
    cell = {}
    for k, (s, _) in real.items():
        cell.setdefault(_setting(s), []).append(final[k])
    measured = {k: statistics.fmean(cell[_setting(s)]) for k, (s, _) in runs.items()}
    sync_of = {}
    for k, (s, _) in real.items():
        if s.get("mode", "sync") == "sync" and not any(s.get(f) for f in VARIANT_FIELDS[1:]):
            sync_of.setdefault(_setting(s, ("seed",) + VARIANT_FIELDS), []).append(final[k])
    null = {}
    for k, (s, _) in runs.items():
        base = sync_of.get(_setting(s, ("seed",) + VARIANT_FIELDS))
        null[k] = statistics.fmean(base) if base else measured[k]
    synthetic = frozenset(runs) - frozenset(real)
    ctx = _context(p, real, keys, final)   # the seed spreads of the kept records only
    ctx.noise = noise_model(replicate_gaps(ctx, grids), machine=machine_noise.load())
    sd = {k: ctx.noise_for(s["optimizer"], s.get("config"), lr_mult(s)).sd / math.sqrt(2) for k, (s, _) in runs.items()}
    for k, v in sd.items():
        if not math.isfinite(v):
            raise ValueError(f"error_rates: no seed spread for {describe(runs[k][0])}")
    moved = _moved(runs, keys, ctx.noise.machine)
    mu = {"null": null, "measured": measured, "at_margin": at_margin(p, runs, keys, null)}
    return Design(p, runs, keys, grids, mu, sd, moved, synthetic)


def _sigs(p) -> set:
    """The identities of every run ``p``'s figures read."""
    return {_sig(s) for n in CATALOG if p.runs_figure(n) for s in figure_runs(CATALOG[n], p)}


def _stand_ins(pending: dict, real: dict) -> dict:
    """{key: (settings, stand-in record)} of the ``pending`` runs whose cell has a kept record."""
    twins: dict = {}
    for k, (s, rec) in sorted(real.items(), key=lambda kv: (kv[1][0].get("seed", 0), kv[0])):
        twins.setdefault(_setting(s), rec)
    plan_prov = next((rec["provenance"] for _, (_, rec) in sorted(real.items())
                      if "launch_commit" in (rec.get("provenance") or {})), None)
    out = {}
    for k, s in pending.items():
        twin = twins.get(_setting(s))
        if twin is not None:
            out[k] = (s, {**twin, "provenance": plan_prov or twin.get("provenance") or {}, "stand_in": True})
    return out


def at_margin(p, runs: dict, keys: dict, null: dict) -> dict:
    """{key: mean} with every claim decided against a margin placed exactly at it (docs/protocol.md
    §8; issue 47 item 2's last null), every other run at its ``null`` mean:

    - C3: every Table 1 optimizer's async gap at M_BENIGN x its sync loss (first size);
    - C10: per Figure 5 optimizer, the async gap at the longest horizon = the shortest's gap +
      M_SMALLEST x the shortest sync loss (a growth exactly at the margin);
    - C13: the MoE's EF loss at Table 3's horizon = (1 + M_SMALLEST) x sync;
    - C14 and C15: the MoE's async gap at M_BENIGN x sync at every horizon but the shortest, and at
      the shortest the longest's gap - M_SMALLEST x the shortest sync loss (C15's growth at its
      margin; C14's shortest part then lies inside its margin: the least favourable "every").

    Runs shared between figures (Table 1's AdamW and Muon cells are Figure 5's shortest horizon)
    move once, Table 1 first. Superiority claims on the moved cells then have true effects that are
    not zero (C5's gap, C7's EF minus async): :func:`null_truths` says which decisions are errors."""
    mu = dict(null)

    def cell(g, c) -> list:
        return [k for k in (keys.get(_sig(s)) for s in g.get(c, ())) if k in runs]

    def mean(ks) -> float:
        return statistics.fmean(mu[k] for k in ks) if ks else float("nan")

    def put(ks, value: float) -> None:
        if math.isfinite(value):
            for k in ks:
                mu[k] = value
    if p.runs_figure("table1"):
        g, first = table1.grid(p), p.sizes[0]
        for o in shared(p).table1_optimizers:
            put(cell(g, (first, o, TWO_BW)), mean(cell(g, (first, o, SYNC))) * (1 + M_BENIGN))
    if p.runs_figure("fig5"):
        g, hs = fig5.grid(p), shared(p).horizons
        for o in fig5.spec(p).horizon_optimizers:
            s0, a0 = mean(cell(g, (o, hs[0], SYNC))), mean(cell(g, (o, hs[0], TWO_BW)))
            put(cell(g, (o, hs[-1], TWO_BW)), mean(cell(g, (o, hs[-1], SYNC))) + (a0 - s0) + M_SMALLEST * s0)
    if p.runs_figure("moe"):
        g, hs = moe.grid(p), moe.horizons(p)
        sync = {h: mean(cell(g, (h, SYNC))) for h in hs}
        put(cell(g, (p.steps, EF)), sync[p.steps] * (1 + M_SMALLEST))
        for h in hs[1:]:
            put(cell(g, (h, TWO_BW)), sync[h] * (1 + M_BENIGN))
        if len(hs) > 1:
            put(cell(g, (hs[0], TWO_BW)), sync[hs[0]] + M_BENIGN * sync[hs[-1]] - M_SMALLEST * sync[hs[0]])
    return mu


def _kind(rec: dict) -> str | None:
    prov = rec.get("provenance") or {}
    return machine_kind(prov) if prov else None


def _moved(runs: dict, keys: dict, spread) -> dict:
    """{key: rms} for runs trained on another machine kind than their setting's sync run of the
    same seed (the engine's model: such a pair adds the regime's rms^2), else 0."""
    out = {}
    for k, (s, rec) in runs.items():
        sync = {f: v for f, v in s.items() if f not in VARIANT_FIELDS}
        twin = keys.get(_sig(sync))
        rms = 0.0
        if twin in runs and twin != k and spread is not None and spread.present:
            a, b = _kind(rec), _kind(runs[twin][1])
            if a and b and not same_kind(a, b):
                rms = spread.rms_for([regime_of(s), regime_of(runs[twin][0])])[0]
        out[k] = rms
    return out


def _context(p, runs: dict, keys: dict, finals: dict) -> Context:
    outcomes = {k: SimOutcome(k, s, rec, finals[k]) for k, (s, rec) in runs.items()}
    return Context(p, Path("."), SimRunner(keys, outcomes), None, None)


#: the nulls the engine's error rate is measured under: the easy one (every run has its pool's
#: SD, normal noise) and the uneven ones of issue 47, each as uneven as the kept data can be
NULLS = {
    "equal": "every run its pool's SD, normal noise",
    "single_2x": "runs of single-seed cells 2x noisier than the pool they borrow",
    "single_4x": "runs of single-seed cells 4x noisier than the pool they borrow",
    "sd_grows_with_gap": "a run's SD x max(1, |its cell's measured gap| / the median measured gap)",
    "t3": "Student t(3) noise (heavy tails) at the same SD",
    "lognormal_cells": "each cell's SD x exp(N(0, 0.5^2)), drawn per replicate",
    "machine_offset": "a run on another machine kind than its sync twin off by +2 rms (systematic)",
    "at_margin": "the margin claims' true effects exactly at their margins (C3, C10, C13-C15), the rest at no "
                 "difference; normal noise at the pool's SD",
}
#: the nulls whose means are not ``null``'s: {null: its means in Design.mu}
NULL_MEANS = {"at_margin": "at_margin"}


def sd_multipliers(d: Design, null: str) -> dict[str, float]:
    """{key: factor on the run's SD} of the deterministic nulls (1 for the others)."""
    if null not in NULLS:
        raise ValueError(f"null: unknown {null!r}; choose from {sorted(NULLS)}")
    one = {k: 1.0 for k in d.runs}
    if null in ("single_2x", "single_4x"):
        n = {}
        for k, (s, _) in d.runs.items():
            n[_setting(s)] = n.get(_setting(s), 0) + 1
        f = 2.0 if null == "single_2x" else 4.0
        return {k: (f if n[_setting(s)] == 1 else 1.0) for k, (s, _) in d.runs.items()}
    if null == "sd_grows_with_gap":
        gap = {k: abs(d.mu["measured"][k] - d.mu["null"][k]) for k in d.runs}
        ref = statistics.median([g for g in gap.values() if g > 0] or [1.0])
        return {k: max(1.0, g / ref) for k, g in gap.items()}
    return one


def draw(d: Design, truth: str, rng: np.random.Generator, scale: float = 1.0, null: str = "equal") -> dict:
    """{key: simulated final loss} of one replicate under ``truth`` and the noise of ``null``."""
    mult = sd_multipliers(d, null)
    if null == "lognormal_cells":
        cells = sorted({_setting(s) for s, _ in d.runs.values()})
        f = dict(zip(cells, np.exp(0.5 * rng.standard_normal(len(cells)))))
        mult = {k: float(f[_setting(s)]) for k, (s, _) in d.runs.items()}
    mean = d.mu[NULL_MEANS.get(null, truth) if truth == "null" else truth]
    out = {}
    for k in d.runs:
        e = rng.standard_t(3) / math.sqrt(3) if null == "t3" else rng.standard_normal()
        m = 2.0 * d.moved[k] if null == "machine_offset" else d.moved[k] * rng.standard_normal()
        out[k] = mean[k] + scale * (d.sd[k] * mult[k] * e + m)
    return out


def replicate(d: Design, truth: str, rng: np.random.Generator, scale: float = 1.0,
              null: str = "equal", own_only: bool = True) -> dict[str, str]:
    """One simulated data set through the whole engine: {claim id: status after Holm}.
    ``own_only=False``: the cells without 3 seeds borrow their pool's SD (what the claims would
    be with every cell seeded: a claim's true status, at vanishing noise)."""
    finals = draw(d, truth, rng, scale, null)
    ctx = _context(d.profile, d.runs, d.keys, finals)
    ctx.noise = noise_model(replicate_gaps(ctx, d.grids), machine=machine_noise.load())
    final = confirmatory.decide(confirmatory.judge_family(ctx, own_only), d.profile.verdicts_meaningful, ALPHA,
                                spending=(1.0,))   # one look at the full level: its validity
    return {c: v.status for c, v in final.items()}


def null_error(claim: str, status: str) -> bool:
    """Is ``status`` an error when there is no true difference?"""
    if claim in MARGIN_CLAIMS:
        return status == FAILS
    return status != INCONCLUSIVE


def null_truths(d: Design, null: str, draws: int = 5) -> dict[str, str]:
    """{claim: its true status} under the means of ``null``: the engine's decision at vanishing
    noise (s x 1e-4, every cell with an SD) when ``draws`` independent draws agree on it, else
    inconclusive (a claim whose true effect sits on its boundary: a margin at its margin, a zero
    difference, is decided at random there, both ways)."""
    seen = [replicate(d, "null", np.random.default_rng(10_000 + i), scale=1e-4, null=null, own_only=False)
            for i in range(draws)]
    return {c.id: seen[0][c.id] if len({s[c.id] for s in seen}) == 1 else INCONCLUSIVE for c in FAMILY}


def wrong(true: str, status: str) -> bool:
    """Is ``status`` an error when the claim's true status is ``true``? On the boundary
    (inconclusive) any decision is; off it, the decision the other way."""
    return status != INCONCLUSIVE and status != true


def simulate(d: Design, truth: str, reps: int, seed: int = 0, log=None, null: str = "equal",
             truths: dict | None = None) -> dict:
    """``reps`` replicates under ``truth``: per claim the counts of each status, and for
    ``null`` the family-wise error count (and ``wrong_holds``, the replicates with a 'holds' that
    is wrong), for ``measured`` the true statuses. Under the nulls with their own means
    (``NULL_MEANS``) an error is judged against ``truths`` (default :func:`null_truths`), else by
    :func:`null_error`."""
    rng = np.random.default_rng(seed)
    counts = {c.id: {HOLDS: 0, FAILS: 0, INCONCLUSIVE: 0} for c in FAMILY}
    if truths is None and truth == "null" and null in NULL_MEANS:
        truths = null_truths(d, null)
    err = (lambda c, s: wrong(truths[c], s)) if truths else null_error
    fwe = fwh = 0
    for i in range(reps):
        st = replicate(d, truth, rng, null=null)
        for c, s in st.items():
            counts[c][s] += 1
        fwe += any(err(c, s) for c, s in st.items())
        fwh += any(s == HOLDS and err(c, s) for c, s in st.items())
        if log and (i + 1) % max(1, reps // 10) == 0:
            log(f"[error_rates] {truth}: {i + 1}/{reps}")
    out = {"truth": truth, "reps": reps, "counts": counts}
    if truth == "null":
        out["fwer"] = fwe / reps
        out["wrong_holds"] = fwh / reps
        out["null"] = null
        if truths:
            out["truths"] = truths
    else:
        out["true"] = replicate(d, truth, np.random.default_rng(seed + 1), scale=1e-4, own_only=False)
    return out


# ---- the plan's interim looks (docs/plan.md §3) ------------------------------------------------

@dataclass
class Looks:
    """The sequential plan's looks on one design: the full profile through batch 0..K, each look's
    grids, and the design of the last look (every batch's runs: kept, or stand-ins), so that each
    look's data is the earlier looks' and more."""

    design: Design
    profiles: list
    grids: list
    figure_runs: list = field(default_factory=list)   # per look {family figure: its runs' identities}


def plan_looks(kept: KeptStore | None = None) -> Looks:
    """Looks 0..len(BATCHES) of the plan (``paper_figs.records.plan``) on the kept records, the runs
    of the batches not yet kept simulated from stand-ins (:func:`design`)."""
    base = get_profile("full")
    d = design(through(base, len(BATCHES)), kept, stand_ins=True)
    profiles = [through(base, k) for k in range(len(BATCHES) + 1)]
    grids = [[CATALOG[n].grid(q) for n in CATALOG if q.runs_figure(n) and hasattr(CATALOG[n], "grid")]
             for q in profiles]
    runs = [{f: frozenset(map(_sig, figure_runs(CATALOG[f], q))) for f in FAMILY_FIGURES if q.runs_figure(f)}
            for q in profiles]
    return Looks(d, profiles, grids, runs)


#: the figures that compute the family's lines
FAMILY_FIGURES = tuple(dict.fromkeys(c.figure for c in FAMILY))


def _judge_looks(looks: Looks, finals: dict):
    """The family's per-line verdicts at each look on their own spreads
    (``confirmatory.judge_family(ctx)``), a figure judged again only at a look that changes its runs
    (on own spreads a line reads only its figure's runs: no pool)."""
    from .statistics.protocol import CLAIMS_BY_ID
    d, noise, prev = looks.design, noise_model([], machine=machine_noise.load()), {}
    for k, q in enumerate(looks.profiles):
        ctx = _context(q, d.runs, d.keys, finals)
        ctx.noise = noise
        raw = {}
        for f in FAMILY_FIGURES:
            if f not in looks.figure_runs[k]:
                continue
            if not (k and looks.figure_runs[k][f] == looks.figure_runs[k - 1].get(f) and f in prev):
                prev[f] = {v.claim: v for v in CATALOG[f].claims(ctx).values() if CLAIMS_BY_ID[v.claim].figure == f}
            raw.update(prev[f])
        yield q, raw


def _judge_looks_slowly(looks: Looks, finals: dict, own_only: bool):
    """:func:`_judge_looks` by ``confirmatory.judge_family`` at every look, pools included."""
    d, machine = looks.design, machine_noise.load()
    for q, grids in zip(looks.profiles, looks.grids):
        ctx = _context(q, d.runs, d.keys, finals)
        ctx.noise = noise_model(replicate_gaps(ctx, grids), machine=machine)
        yield q, confirmatory.judge_family(ctx, own_only)


def sequential_replicate(looks: Looks, rng: np.random.Generator, null: str = "equal", spending=None,
                         scale: float = 1.0, own_only: bool = True, fast: bool = True,
                         truth: str = "null") -> list[dict[str, str]]:
    """One simulated data set of the whole plan under ``null`` (or ``truth`` 'measured': the cells'
    measured means) ({claim: status} per look): each
    look judges the family on the runs through its batch (one draw for every run: a later look's
    data contain the earlier's) and decides it as the report does, Holm on p* = min_j p_j / f_j
    over the looks so far (``spending``: the plan's, ``sequential.SPENDING``). ``fast``: on own spreads
    a figure is judged again only where its runs change (:func:`_judge_looks`)."""
    from .statistics.sequential import SPENDING
    spending = SPENDING if spending is None else spending
    d = looks.design
    finals = draw(d, truth, rng, scale, null)
    raws, out = [], []
    for q, raw in (_judge_looks(looks, finals) if own_only and fast else _judge_looks_slowly(looks, finals, own_only)):
        final = confirmatory.decide(raw, q.verdicts_meaningful, ALPHA, earlier=raws, spending=spending)
        raws.append(raw)
        out.append({c: v.status for c, v in final.items()})
    return out


def sequential_truths(looks: Looks, null: str, draws: int = 5) -> dict[str, str]:
    """:func:`null_truths` at the last look (every batch's runs)."""
    d = looks.design
    last = Design(looks.profiles[-1], d.runs, d.keys, looks.grids[-1], d.mu, d.sd, d.moved, d.synthetic)
    return null_truths(last, null, draws)


def simulate_plan(looks: Looks, reps: int, seed: int = 0, null: str = "equal", log=None, spending=None) -> dict:
    """The plan's family-wise error rate including its interim looks: the fraction of ``reps``
    replicates with an error (:func:`null_error`, or against :func:`sequential_truths` under a null
    with its own means) at any look; per look, the replicates with an error at that look."""
    rng = np.random.default_rng(seed)
    truths = sequential_truths(looks, null) if null in NULL_MEANS else None
    err = (lambda c, s: wrong(truths[c], s)) if truths else null_error
    any_look, at_look, holds = 0, [0] * len(looks.profiles), 0
    first: dict = {}
    for i in range(reps):
        per_look = sequential_replicate(looks, rng, null, spending)
        bad = [any(err(c, s) for c, s in st.items()) for st in per_look]
        any_look += any(bad)
        holds += any(s == HOLDS and err(c, s) for st in per_look for c, s in st.items())
        for j, b in enumerate(bad):
            at_look[j] += b
        for j, st in enumerate(per_look):
            for c, s in st.items():
                if err(c, s):
                    first.setdefault(c, [0] * len(per_look))[j] += 1
        if log and (i + 1) % max(1, reps // 10) == 0:
            log(f"[error_rates] plan, {null}: {i + 1}/{reps}")
    return {"null": null, "reps": reps, "fwer": any_look / reps, "wrong_holds": holds / reps,
            "per_look": [n / reps for n in at_look], "errors": first, "truths": truths}


def plan_table(r: dict) -> list[str]:
    rate = r["fwer"]
    return [f"The plan's family-wise error rate over its {len(r['per_look'])} looks (spending f = "
            f"docs/plan.md §3; each look Holm on p*) under '{r['null']}' ({NULLS[r['null']]}): {rate:.3f} "
            f"(Monte Carlo SE {mc_se(rate, r['reps']):.3f}, {r['reps']} replicates; nominal {ALPHA:.2f}); "
            f"a wrong 'holds' in {r['wrong_holds']:.3f}",
            "per look (an error at that look): " + ", ".join(f"{j}: {x:.3f}" for j, x in enumerate(r["per_look"])),
            "errors per claim and look: " + (", ".join(f"{c} {v}" for c, v in sorted(r["errors"].items())) or "none")]


def mc_se(rate: float, reps: int) -> float:
    return math.sqrt(max(rate * (1 - rate), 1e-12) / reps)


def table(null: dict, measured: dict | None) -> list[str]:
    """The report: family-wise rate under no difference, per-claim rates and powers."""
    r = null["fwer"]
    L = [f"Family-wise false-positive rate with no true difference ({null.get('null', 'equal')}: "
         f"{NULLS[null.get('null', 'equal')]}): {r:.3f} (Monte Carlo SE {mc_se(r, null['reps']):.3f}, "
         f"{null['reps']} replicates; nominal {ALPHA:.2f}); a wrong 'holds' in {null['wrong_holds']:.3f}", "",
         "| claim | null: holds / does not hold / inconclusive | measured: true status | power | wrong way |",
         "|---|---|---|---|---|"]
    for c in FAMILY:
        n = null["counts"][c.id]
        row = f"| {c.id} | {n[HOLDS]} / {n[FAILS]} / {n[INCONCLUSIVE]} |"
        if measured:
            true = measured["true"][c.id]
            m = measured["counts"][c.id]
            wrong = {HOLDS: FAILS, FAILS: HOLDS}.get(true)
            power = f"{m[true] / measured['reps']:.2f}" if true != INCONCLUSIVE else "-"
            row += f" {true} | {power} | {m[wrong] / measured['reps']:.2f} |" if wrong else f" {true} | - | - |"
        else:
            row += " - | - | - |"
        L.append(row)
    return L


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m paper_figs.error_rates", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=1000, help="replicates per truth (default 1000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", default="full", help="the design's profile (its runs must all be kept)")
    ap.add_argument("--null-only", action="store_true", help="skip the measured-effects (power) simulation")
    ap.add_argument("--null", default="equal", choices=sorted(NULLS),
                    help="the null the family-wise rate is measured under (default equal)")
    ap.add_argument("--plan", action="store_true",
                    help="the sequential plan's rate over all its looks (docs/plan.md §3): one draw per replicate "
                         "for every batch's runs (the batches not yet kept simulated from stand-in records)")
    a = ap.parse_args(argv)
    if a.reps < 1:
        ap.error(f"--reps: must be >= 1, got {a.reps}")
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    if a.plan:
        print("\n".join(plan_table(simulate_plan(plan_looks(), a.reps, a.seed, a.null, log))))
        return 0
    d = design(a.profile)
    null = simulate(d, "null", a.reps, a.seed, log, null=a.null)
    measured = None if a.null_only else simulate(d, "measured", a.reps, a.seed + 1000, log)
    print("\n".join(table(null, measured)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
