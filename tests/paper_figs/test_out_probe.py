"""``python -m paper_figs --out`` on a path that cannot hold the outputs: one line, exit 2,
before any run starts (issue 30)."""
import sys
import types

import pytest

from paper_figs.cli import main


def test_bad_out_is_one_line_before_any_run(tmp_path, monkeypatch, capsys):
    (tmp_path / "file").write_text("x")
    never = types.ModuleType("paper_figs.pipeline")   # stands in for the run: reaching it fails the test
    never.run_profile = lambda *a, **kw: pytest.fail("ran with a bad --out")
    monkeypatch.setitem(sys.modules, "paper_figs.pipeline", never)
    assert main(["--out", str(tmp_path / "file" / "figs")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("python -m paper_figs: error: --out ") and "Not a directory" in err
    assert "Traceback" not in err and len(err.splitlines()) == 1
