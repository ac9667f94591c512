"""paper_figs.cross_machine: the regimes and the sample are fixed by rule (the retraining
itself is minutes: not here)."""
from __future__ import annotations

import pytest

from paper_figs.cross_machine import PER_REGIME, DEFAULT_PER_REGIME, main, sample_plan, summary
from paper_figs.records.kept import KeptStore
from paper_figs.records.machine_regimes import REGIMES, machine_kind, regime_of

BASE = dict(optimizer="adamw", config="tiny", steps=1500, mode="sync")


@pytest.mark.parametrize("change, regime", [
    ({}, "sync"), ({"mode": "2bw"}, "delayed"), ({"mode": "pipedream"}, "delayed"),
    ({"mode": "2bw", "ef": True}, "EF"), ({"mode": "2bw", "dc_asgd": 0.04}, "mitigation"),
    ({"mode": "2bw", "sync_start": 75}, "mitigation"), ({"momentum": 0.98}, "high momentum"),
    ({"momentum": 0.9}, "sync"),                       # AdamW's preset beta1, spelled out
    ({"optimizer": "adan", "momentum": 0.98}, "sync"),  # Adan's preset is 0.98
    ({"opt_kwargs": {"betas": [0.9, 0.999]}, "optimizer": "lion"}, "high momentum"),
    ({"lr": 2e-3}, "high lr"), ({"lr": 5e-4}, "low lr"), ({"lr": 1e-3}, "sync"),
    ({"lr": 2e-3, "momentum": 0.98, "mode": "2bw"}, "high lr"),   # the lr comes first
    ({"steps": 3000}, "long horizon"), ({"config": "tiny_moe", "steps": 6000}, "MoE"),
    ({"config": "small", "lr": 8e-3}, "small model"),
])
def test_regime_of_takes_the_first_regime_that_applies(change, regime):
    assert regime_of({**BASE, **change}) == regime


def test_machine_kind_adds_the_instruction_set_when_recorded():
    m = "AMD EPYC x2, Linux 6.18, Python 3.11.7, torch 2.13.0+cpu"
    assert machine_kind({"machine": m}) == "AMD EPYC x2"
    assert machine_kind({"machine": m, "cpu_capability": "AVX2"}) == "AMD EPYC x2 [AVX2]"


def _rec(i, machine, **change):
    return {"key": f"{i:016x}", "settings": {**BASE, "seed": i, **change}, "provenance": {"machine": machine}}


def test_the_sample_takes_each_regimes_quota_from_other_machines_alternating_kinds():
    recs = ([_rec(i, "Intel x2, Linux") for i in range(8)] + [_rec(10 + i, "AMD x2, Linux") for i in range(8)]
            + [_rec(20 + i, "Here x2, Linux") for i in range(8)]
            + [_rec(30 + i, "Intel x2, Linux", config="small") for i in range(5)])
    plan = sample_plan(recs, "Here x2")
    assert plan == sample_plan(list(reversed(recs)), "Here x2")          # the order of the input does not matter
    assert all(machine_kind(r["provenance"]) != "Here x2" for r in plan)
    sync = [r for r in plan if regime_of(r["settings"]) == "sync"]
    assert len(sync) == DEFAULT_PER_REGIME
    kinds = [machine_kind(r["provenance"]) for r in sync]
    assert abs(kinds.count("Intel x2") - kinds.count("AMD x2")) <= 1
    assert len([r for r in plan if regime_of(r["settings"]) == "small model"]) == PER_REGIME["small model"]
    assert regime_of(plan[0]["settings"]) == "sync" and set(REGIMES) >= {regime_of(r["settings"]) for r in plan}


def test_summary_gives_n_and_the_rms_per_regime():
    rows = [{"regime": "sync", "diff": d, "kept_on": "X"} for d in (0.0, 0.003, -0.004)]
    (s,) = summary({"rows": rows})
    assert (s["n"], s["max_abs"]) == (3, 0.004)
    assert s["rms"] == pytest.approx((25e-6 / 3) ** 0.5)


def test_the_real_plan_covers_every_regime_with_kept_records_from_other_machines():
    store = KeptStore()
    plan = sample_plan([store.get(k) for k in store.keys()], "a machine that made no record [AVX2]")
    assert {regime_of(r["settings"]) for r in plan} == set(REGIMES)


def test_help_explains_how_to_emulate_another_cpu(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "ATEN_CPU_CAPABILITY=avx2" in capsys.readouterr().out


def test_new_provenance_names_the_machine_kind_with_torchs_cpu_capability():
    """New records carry torch's vector capability, so machine_kind tells an AVX2 run from an
    AVX-512 run of the same CPU model."""
    import torch

    from paper_figs.records.provenance import provenance
    prov = provenance("x")
    cap = torch.backends.cpu.get_cpu_capability()
    assert prov["cpu_capability"] == cap
    assert machine_kind(prov).endswith(f"[{cap}]")
