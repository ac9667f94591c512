"""paper_figs.cross_machine finds the kept runs it retrains (the retraining itself is minutes: not here)."""
from __future__ import annotations

import pytest

from paper_figs.cross_machine import fig3_sync_records, main
from paper_figs.kept import KeptStore


def test_finds_figure3_seed0_sync_records_of_each_optimizer():
    recs = fig3_sync_records(KeptStore(), ["adamw", "muon"])
    assert [r["settings"]["optimizer"] for r in recs] == ["adamw", "muon"]
    assert all(r["settings"]["mode"] == "sync" and r["settings"]["seed"] == 0 for r in recs)


def test_help_explains_how_to_emulate_another_cpu(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "ATEN_CPU_CAPABILITY=avx2" in capsys.readouterr().out
