"""``python -m gpu_runs.sweep OUT`` with an OUT that cannot be created: one line, exit 2,
before any run (issue 30)."""
import gpu_runs.sweep as sweep


def test_unusable_out_is_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "file").write_text("x")
    monkeypatch.setattr(sweep, "run_grid", lambda *a, **kw: (_ for _ in ()).throw(AssertionError("ran")))
    rc = sweep.main([str(tmp_path / "file" / "sweep"), "--optimizers", "adamw", "--lr-mults", "1",
                     "--variants", "sync"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("python -m gpu_runs.sweep: error: Not a directory")
