"""One route to Newton-Schulz for the whole Muon family: muon, normuon, adamuon, scion's
hidden group, the Spectral geometry and the data-parallel ShardedSpectral all orthogonalise
through lmo.polar_factor.orthogonalize_many, once per step with every matrix, and nothing else
in lmo or gpu_runs calls newton_schulz / polar to orthogonalise an update."""
import re
from pathlib import Path

import pytest
import torch

import lmo
from lmo import polar_factor
from lmo.muon_family import adamuon, muon, normuon
from lmo.steepest_descent import lmo_momentum
from lmo.geometry import RMSToRMS, Spectral
from lmo.layer_geometry import scion

from gpu_runs.pipeline.sharded_muon import sharded_muon

ROOT = Path(lmo.__file__).resolve().parents[1]


@pytest.fixture
def calls(monkeypatch):
    """Every call of orthogonalize_many: (shapes, exact); the real function still computes."""
    seen = []
    real = polar_factor.orthogonalize_many

    def spy(Gs, *a, **kw):
        seen.append(([tuple(G.shape) for G in Gs], kw.get("exact", False)))
        return real(Gs, *a, **kw)

    monkeypatch.setattr(polar_factor, "orthogonalize_many", spy)
    return seen


def _tree():
    g = torch.Generator().manual_seed(0)
    return {"a": torch.randn(4, 6, generator=g), "b": torch.randn(4, 6, generator=g),
            "c": torch.randn(2, 5, 3, generator=g)}


FAMILY = {
    "muon": lambda ex: muon(0.02, exact=ex),
    "normuon": lambda ex: normuon(0.02, exact=ex),
    "adamuon": lambda ex: adamuon(0.02, exact=ex),
    "lmo_momentum(Spectral ns)": lambda ex: lmo_momentum(0.02, Spectral("svd" if ex else "ns")),
    "lmo_momentum(RMSToRMS ns)": lambda ex: lmo_momentum(0.02, RMSToRMS("svd" if ex else "ns")),
    "sharded_muon(dp=1)": lambda ex: sharded_muon(0.02, None, 1),
}


#: (optimizer, exact): the sharded Muon is NS only (it refuses exact)
CASES = [(n, ex) for n in sorted(FAMILY) for ex in (False, True) if not (ex and n.startswith("sharded"))]


@pytest.mark.parametrize("name,exact", CASES)
def test_every_muon_family_optimizer_calls_the_one_function(calls, name, exact):
    p, g = _tree(), _tree()
    opt = FAMILY[name](exact)
    state = opt.init(p)
    for _ in range(2):
        _, state = opt.update(g, state, p)
    assert calls == [([(4, 6), (4, 6), (2, 5, 3)], exact)] * 2


def test_scions_hidden_group_calls_it(calls):
    p = {"layers.0.attn.q.weight": torch.randn(8, 8), "layers.0.mlp.up.weight": torch.randn(12, 8),
         "embed.weight": torch.randn(16, 8), "head.weight": torch.randn(16, 8), "norm.weight": torch.ones(8)}
    opt = scion(0.02)
    opt.update(p, opt.init(p), p)
    assert len(calls) == 1 and sorted(calls[0][0]) == [(8, 8), (12, 8)]


def test_spectral_lmo_of_one_matrix_calls_it(calls):
    Spectral("ns").lmo(torch.randn(3, 5))
    Spectral("svd").lmo(torch.randn(3, 5))
    assert calls == [([(3, 5)], False), ([(3, 5)], True)]


def test_the_route_equals_newton_schulz_and_polar():
    """The one function computes what newton_schulz / polar compute (same numbers, bit for bit)."""
    G = torch.randn(2, 5, 7, generator=torch.Generator().manual_seed(3))
    H = torch.randn(7, 5, generator=torch.Generator().manual_seed(4))
    ns = polar_factor.orthogonalize_many([G, H], steps=5, coefficients="keller", dtype=torch.float32)
    assert torch.equal(ns[0], polar_factor.newton_schulz(G, dtype=torch.float32))
    assert torch.equal(ns[1], polar_factor.newton_schulz(H, dtype=torch.float32))
    ex = polar_factor.orthogonalize_many([G, H], exact=True)
    assert torch.equal(ex[0], polar_factor.polar(G)) and torch.equal(ex[1], polar_factor.polar(H))


def test_no_other_route_in_the_source():
    """Outside lmo.polar_factor (and the benchmarks), no module of lmo or gpu_runs calls
    newton_schulz / newton_schulz_many / polar itself."""
    pattern = re.compile(r"(?<![\w.])(newton_schulz|newton_schulz_many|polar)\(|\.(newton_schulz|newton_schulz_many)\(")
    offenders = []
    for pkg in ("lmo", "gpu_runs"):
        for f in (ROOT / pkg).rglob("*.py"):
            rel = f.relative_to(ROOT)
            if rel.as_posix() == "lmo/polar_factor.py" or "bench" in rel.parts:
                continue
            code = "\n".join(line for line in f.read_text().splitlines() if not line.strip().startswith("#"))
            code = re.sub(r'""".*?"""', "", code, flags=re.S)
            offenders += [f"{rel}: {m.group(0)}" for m in pattern.finditer(code)]
    assert offenders == []
