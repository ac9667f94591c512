"""python -m theory: --json parses and holds every check; text, --bound, --markdown, --help."""
import json
import os
import subprocess
import sys

from theory.__main__ import main, show_bound
from theory.registry import names


def _run(*args):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "theory", *args], capture_output=True, text=True,
                          env=env, timeout=300)


def test_json_subprocess_parses_and_every_step_ok():
    r = _run("--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert [b["name"] for b in d["bounds"]] == names()
    steps = [s for x in d["derivations"] for s in x["steps"]]
    assert steps and all(s["ok"] for s in steps)
    assert all(d["limits"].values())
    lit = next(b for b in d["bounds"] if b["name"] == "paper_delayed_noise_literal")
    assert lit["scaling_ok"] is False
    assert all(b["scaling_ok"] for b in d["bounds"] if b["status"] == "derived")
    assert all(p > 1 for p in d["delay_price"]["delayed"])


def test_text_proof_and_help(capsys, tmp_path):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "derived_delayed_theorem" in out and "check: symbolic" in out and "premise" in out
    assert "REJECTED" not in out
    md = tmp_path / "proof.md"
    assert main(["--markdown", str(md)]) == 0
    text = md.read_text()
    assert "$$" in text and "\\le" in text
    r = _run("--help")
    assert r.returncode == 0 and "--json" in r.stdout and "--bound" in r.stdout


def test_show_bound():
    s = show_bound("derived_delayed_theorem")
    assert "avg_grad_norm_y" in s and "A1" in s and "check:" in s
    assert "FAILS" in show_bound("paper_delayed_noise_literal")
