"""docs/proof.md is current; the slack of C2 against the sharper bounds."""
from pathlib import Path

import numpy as np

import theory
from theory.results.slack import SHARPER, limits, slack_grid

ROOT = Path(__file__).resolve().parents[2]


def test_docs_proof_md_is_current():
    text = theory.proof_markdown()
    assert (ROOT / "docs" / "proof.md").read_text() == text, \
        "docs/proof.md is stale: run python -m theory --all --markdown docs/proof.md"
    assert "REJECTED" not in text and "BROKEN" not in text and "$$" in text


def test_slack_limits_and_grid():
    assert all(limits().values()), limits()
    g = slack_grid()
    for k in SHARPER:
        assert np.all(np.asarray(g[k]) >= 1 - 1e-12)
    # independent numbers at mu = 0.5, z = 1: C2 = sqrt(10) + 1, delayed = 1 + 2, EF worst = 1 + 2 + 1
    i, j = g["mu"].index(0.5), g["z"].index(1.0)
    assert np.isclose(g["delayed at y"][i][j], (np.sqrt(10) + 1) / 3)
    assert np.isclose(g["EF worst case"][i][j], (np.sqrt(10) + 1) / 4)
