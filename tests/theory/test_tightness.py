"""Extremal witnesses (theory.results.slack.tightness_table): every step of every derivation and every
registered bound has its tightest instance; the analytic constructions attain theirs; docs/proof.md
holds the table the code produces and renders no raw Python in bold, no mixed-number fraction."""
import re
from pathlib import Path

from theory.proofs.derivation import premise_id
from theory.proofs.registry import all_derivations
from theory.records.registry import all_bounds
from theory.results.slack import TIGHT, _premise_ratio, tightness_markdown, tightness_table, verdict
from theory.checks.witness_grid import GRID

ROOT = Path(__file__).resolve().parents[2]


def _rows():
    return {r["row"]: r for r in tightness_table()}


def test_every_step_and_every_bound_has_a_row():
    rows = _rows()
    for d in all_derivations():
        for s in d.steps:
            assert premise_id(d, s) in rows, premise_id(d, s)
    for b in all_bounds():
        assert any(k.startswith(f"bound {b.name}") for k in rows), b.name


def test_a_row_is_tight_or_says_why_not():
    for r in tightness_table():
        v = verdict(r)
        if r["ratio"] is not None and r["ratio"] < TIGHT:
            assert v.startswith("loose: ") and len(v) > 20, r
        assert r["ratio"] is None or r["ratio"] <= 1 + 1e-6 or "not a valid bound" in r["row"], r


def test_the_telescope_and_the_theorems_are_attained_by_the_analytic_starts():
    """f = a x^2/2 on one coordinate, mu = 1, sigma = 0 (L = a):
    x_0 = eta/2: |grad f| = a eta/2 at every step, Delta_0 = a eta^2/8, so the telescope's ratio is
    G / (Delta_0/(eta K) + L eta/2) = 1/(1 + 1/(4K)), K = 79;
    x_0 = K eta: y_t = x_0 - t eta reaches 0 at t = K, G = L eta (K+1)/2 = Delta_0/(eta K) + L eta/2 (ratio 1),
    and a theorem with c L eta more has ratio (K+1)/(K+1+2c), K = 299."""
    tel_step = next(s for d in all_derivations() for s in d.steps if s.name == "telescope over t < K")
    near = next(i for i in GRID if i.start == "fixed" and i.mu == 1 and i.x0_scale == i.eta / 2 and i.variant == "sync")
    assert abs(_premise_ratio(tel_step, near)[0] - 1 / (1 + 1 / (4 * 79))) < 1e-9
    rows = _rows()
    assert rows["perturbed_theorem: telescope over t < K"]["ratio"] > 1 - 1e-9
    assert rows["bound derived_sync_theorem"]["ratio"] > 1 - 1e-9
    K = 299
    for name, c in (("derived_delayed_theorem", 2), ("derived_ef_theorem_worst", 4), ("kovalev_sync_theorem", 3)):
        r = rows[f"bound {name}"]
        assert "x0=2.99 start=fixed" in r["instance"] and abs(r["ratio"] - (K + 1) / (K + 1 + 2 * c)) < 1e-8, (name, r)


def test_the_drift_and_noise_premises_and_the_lemmas_are_attained():
    rows = _rows()
    drift = rows["perturbed_lemma: drift: A2 + triangle inequality + y-steps <= eta"]
    assert drift["ratio"] > 0.999 and "sigma=0" in drift["instance"]
    noise = rows["perturbed_lemma: noise: A4 + Jensen + martingale orthogonality + A3"]
    assert noise["ratio"] > 0.999 and "aligned" in noise["instance"] and noise["t"] == 0   # N_0 = rho sigma exactly
    for name in ("derived_sync_lemma", "derived_delayed_lemma", "derived_ef_lemma_trajectory"):
        assert rows[f"bound {name}"]["ratio"] > 0.999, name
    # Kovalev's lemma is looser by L eta: the attained lag L eta (1-mu)(1-(1-mu)^t)/mu over L eta/mu, at the
    # large-t corner mu = 0.01, t = 699
    assert abs(rows["bound kovalev_sync_lemma"]["ratio"] - 0.99 * (1 - 0.99 ** 699)) < 1e-6
    # C2 at x keeps sqrt(2) on the noise: its QM-AM step is at best 1/sqrt(2)
    assert abs(rows["paper_c2_x: a <= sqrt(2 a^2 + 2 b^2)"]["ratio"] - 2 ** -0.5) < 1e-3


def test_docs_proof_md_holds_the_generated_table():
    doc = (ROOT / "docs" / "proof.md").read_text()
    assert tightness_markdown() in doc


def test_docs_proof_md_renders_no_python_in_bold_and_no_mixed_number():
    doc = (ROOT / "docs" / "proof.md").read_text()
    prose = re.sub(r"`[^`]*`", "CODE", doc)   # formulas in code spans are code, not bold text
    for span in re.findall(r"\*\*(.+?)\*\*", prose):
        assert not re.search(r"\w\*\w|\*\*\d", span), span
    assert r"2 \frac{1}{K}" not in doc and r"2 \cdot \frac{1}{K} \sum_{t<K} E_t" in doc


def test_the_verdict_is_computed_from_the_ratio_whatever_the_registration():
    """A ratio above 1 reads 'exceeded' on a row registered valid too; 'tight' only at or below 1."""
    for kind, row in (("bound", "bound derived_sync_lemma"), ("premise", "sync_lemma: sync has y_t = x_t"),
                      ("algebra", "perturbed_lemma: lag bounded uniformly in t")):
        for ratio in (1.000002, 1.3, 26.0):
            v = verdict({"row": row, "kind": kind, "ratio": ratio})
            assert v.startswith("exceeded") and "fails here" in v, (row, ratio, v)
        assert verdict({"row": row, "kind": kind, "ratio": 1.0}) == "tight"
    assert verdict({"row": "bound x (not a valid bound)", "kind": "bound", "ratio": 2.0}) == "exceeded: not a valid bound"
