"""python -m theory: --json (slow: the whole object), text, --bound (unknown: names, exit 2),
--markdown, --help with defaults, --slack-figure."""
import json
import os
import subprocess
import sys

import pytest

from theory.__main__ import main, show_bound
from theory.records.registry import names


def _run(*args):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "theory", *args], capture_output=True, text=True,
                          env=env, timeout=600)


@pytest.mark.slow
def test_json_subprocess_parses_and_every_check_ok():
    r = _run("--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert [b["name"] for b in d["bounds"]] == names()
    steps = [s for x in d["derivations"] for s in x["steps"]]
    assert steps and all(s["ok"] for s in steps)
    assert all(x["chain"]["ok"] for x in d["derivations"])
    assert all(d["limits"].values())
    lit = next(b for b in d["bounds"] if b["name"] == "paper_delayed_noise_literal")
    assert lit["scaling_ok"] is False and "not a bound by itself" in lit["reading"]
    for n in ("paper_c1_y", "paper_c2_y"):
        b = next(b for b in d["bounds"] if b["name"] == n)
        assert b["valid"] is True and b["reading"].startswith(n[6:8].upper())
        imp = {(i["reading"], i["variant"]): i["status"] for i in d["implications"]}
        assert imp[(n, "delayed at y")] == imp[(n, "EF worst case")] == "implied"
    assert d["mutants"] and all(m["caught"] for m in d["mutants"])
    assert all(w["ok"] and w["samples"] > 0 for w in d["premise_witnesses"].values())
    assert all(b["scaling_ok"] for b in d["bounds"] if b["status"] == "derived")
    assert all(p > 1 for p in d["delay_price"]["delayed"])


def test_text_proof_and_markdown(capsys, tmp_path):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "derived_delayed_theorem" in out and "proved (sympy)" in out and "premise (cited; checked" in out
    assert "Symbols:" in out and "E_t" in out and "chain: ok" in out
    assert "REJECTED" not in out and "BROKEN" not in out
    md = tmp_path / "proof.md"
    assert main(["--markdown", str(md)]) == 0
    text = md.read_text()
    assert "$$" in text and "\\le" in text


def test_help_shows_defaults_and_unknown_bound_lists_names(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "--bound" in out and "(default: None)" in out and "--slack-figure" in out
    assert main(["--bound", "paper_c9_y"]) == 2
    err = capsys.readouterr().err
    assert "no bound named 'paper_c9_y'" in err and "paper_c2_y" in err and "Traceback" not in err


def test_unknown_bound_subprocess_has_no_traceback():
    r = _run("--bound", "nope")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "derived_delayed_lemma" in r.stderr


def test_unwritable_outputs_are_user_errors(capsys, tmp_path):
    assert main(["--markdown", str(tmp_path / "no" / "such" / "dir" / "p.md")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_slack_figure(tmp_path):
    p = tmp_path / "slack.png"
    assert main(["--slack-figure", str(p)]) == 0 and p.stat().st_size > 1000


def test_show_bound():
    s = show_bound("derived_delayed_theorem")
    assert "avg_grad_norm_y" in s and "A1" in s and "check:" in s
    assert "FAILS" in show_bound("paper_delayed_noise_literal")
    assert "reading" in show_bound("paper_c2_y")
