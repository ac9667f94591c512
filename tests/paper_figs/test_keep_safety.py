"""Kept records under misuse (issue 39, item 5 and the kept-record bullets of item 7):
``keep --prune`` never removes another profile's records and asks first (or needs --yes);
a file in the kept directory that is not a record is ignored with a warning everywhere;
``keep --check`` replays a record to its end; cache and kept files get the usual
permissions."""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from paper_figs_fakes import fake_deps

from paper_figs import cli, keep
from paper_figs.records import kept
from paper_figs.records.cache import Cache, config_hash, write_atomically
from paper_figs.records.identity import run_key
from paper_figs.keep import main as keep_main
from paper_figs.records.kept import KeptStore, compact, seal
from paper_figs.records.profiles import get_profile
from paper_figs.replay import compare_head, compare_log, replay


def _store_copy(tmp_path) -> KeptStore:
    copy = tmp_path / "kept"
    shutil.copytree(KeptStore().root, copy)
    return KeptStore(copy)


def _stale_record(profile: str, steps: int) -> dict:
    """A record that no run of any profile wants (its steps match no grid), trained by ``profile``."""
    config = {"optimizer": "adamw", "steps": steps, "seed": 0, "config": "tiny"}
    return compact({"key": config_hash(config), "config": config, "settings": config,
                    "result": {"final_val_loss": 2.0, "log": [{"step": steps, "val_loss": 2.0}]},
                    "provenance": {"command": f"python -m paper_figs --profile {profile}", "commit": "abc",
                                   "machine": "test", "finished_at": "2026-01-01 00:00 UTC"}})


@pytest.fixture
def store(tmp_path):
    """A copy of the repository's kept records plus one stale record of micro and one of full."""
    s = _store_copy(tmp_path)
    s.put(_stale_record("micro", 7))
    s.put(_stale_record("full", 9))
    (tmp_path / "out" / "cache").mkdir(parents=True)      # keep promotes from OUT/cache (empty here)
    return s


def test_prune_of_one_profile_never_removes_another_profiles_records(store, tmp_path, capsys):
    """The probe: `keep --profile micro --prune` removed every full-profile record."""
    before = set(store.keys())
    micro_stale, full_stale = _stale_record("micro", 7)["key"], _stale_record("full", 9)["key"]
    assert keep_main(["--out", str(tmp_path / "out"), "--kept", str(store.root), "--profile", "micro",
                      "--prune", "--yes"]) == 0
    assert set(store.keys()) == before - {micro_stale}
    out = capsys.readouterr().out
    assert "1 stale kept record(s) were trained by another profile" in out
    assert "removed 1 kept record(s) of the micro profile" in out
    assert keep_main(["--out", str(tmp_path / "out"), "--kept", str(store.root), "--profile", "full",
                      "--prune", "--yes"]) == 0
    assert set(store.keys()) == before - {micro_stale, full_stale}      # the 447 full records stay


def test_prune_asks_and_without_a_yes_removes_nothing(store, tmp_path, monkeypatch, capsys):
    before = set(store.keys())
    argv = ["--out", str(tmp_path / "out"), "--kept", str(store.root), "--profile", "micro", "--prune"]
    asked = []
    monkeypatch.setattr(keep, "ask", lambda q: asked.append(q) or False)
    assert keep_main(argv) == 1
    assert set(store.keys()) == before and "remove these 1 record(s)" in asked[0]
    assert "nothing removed (pass --yes" in capsys.readouterr().out
    monkeypatch.setattr(keep, "ask", lambda q: True)
    assert keep_main(argv) == 0
    assert set(store.keys()) == before - {_stale_record("micro", 7)["key"]}


def test_ask_says_no_without_a_terminal(monkeypatch):
    class NotATerminal:
        def isatty(self):
            return False

    monkeypatch.setattr("sys.stdin", NotATerminal())
    monkeypatch.setattr("builtins.input", lambda q: pytest.fail("asked without a terminal"))
    assert keep.ask("remove? ") is False


def test_files_that_are_not_records_are_ignored_with_a_warning(tmp_path, monkeypatch, capsys):
    store = _store_copy(tmp_path)
    (store.root / "notes.json").write_text('{"todo": "retrain lion"}')
    (store.root / "Run-1.json").write_text("not even json")
    assert store.strays() == [store.root / "Run-1.json", store.root / "notes.json"]
    assert "notes" not in store.keys() and store.broken() == []
    assert keep_main(["--out", str(tmp_path / "none"), "--kept", str(store.root),
                      "--check", "1", "--check-steps", "1"]) == 0
    err = capsys.readouterr().err
    assert f"warning: {store.root / 'notes.json'} is not a kept record" in err and "Traceback" not in err
    monkeypatch.setattr(kept, "KEPT_DIR", store.root)
    monkeypatch.setattr(kept.KeptStore.__init__, "__defaults__", (store.root,))
    assert cli.main(["--list", "--out", str(tmp_path / "o")]) == 0      # --list and make figs start alike
    err = capsys.readouterr().err
    assert "Run-1.json is not a kept record" in err and "notes.json is not a kept record" in err


def test_keep_check_replays_a_record_to_its_end(tmp_path, capsys):
    """A micro run of 40 steps (evaluated at 20 and 40; its head is steps <= 30) kept, then
    replayed by `keep --check`: to its end by default. A kept number past the head moved by
    0.05 is caught by the full replay and missed by a replay of the first steps."""
    from gpu_runs.recipe import TrainConfig
    from gpu_runs.train import train

    from paper_figs.figures.common import variant
    from paper_figs.records.runs import Runner
    s = variant(get_profile("micro", steps=40), "adamw", "sync", seed=0)
    out = Runner(fake_deps(train=train, TrainConfig=TrainConfig), Cache(tmp_path / "cache"),
                 log=lambda _: None, progress=False).run_all([s])[0]
    assert out.ok, out.error
    store = KeptStore(tmp_path / "kept")
    assert keep_main(["--out", str(tmp_path), "--kept", str(store.root), "--all", "--check", "1"]) == 0
    assert "to its end (step 40): matches its kept log (largest difference 0)" in capsys.readouterr().out
    rec = store.get(out.key)
    rows = replay(rec)
    assert [r["step"] for r in rows][-1] == 40 and compare_log(rec, rows) == []
    moved = json.loads(json.dumps(rec))
    moved["result"]["log"][-1]["val_loss"] += 0.05
    moved["result"]["final_val_loss"] += 0.05
    assert [d.split(":")[0] for d in compare_log(moved, rows)] == ["step 40 val_loss", "final val loss"]
    assert compare_head(moved, rows, 30) == []                      # the first steps cannot see it
    store.put(seal(moved))
    assert keep_main(["--out", str(tmp_path / "none"), "--kept", str(store.root), "--check", "1"]) == 1
    assert "DIFFERS: step 40 val_loss" in capsys.readouterr().out


def test_cache_and_kept_files_get_the_usual_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        write_atomically(tmp_path / "a" / "rec.json", "{}")
        (tmp_path / "plain.json").write_text("{}")
    finally:
        os.umask(old)
    assert (tmp_path / "a" / "rec.json").stat().st_mode & 0o777 == (tmp_path / "plain.json").stat().st_mode & 0o777 == 0o644


def test_the_console_counts_distinct_runs_as_the_readme_does(tmp_path):
    """`make figs` counted uses of runs by the figures (598) where the README counts distinct
    runs (447): the console line now gives both, distinct first."""
    from paper_figs.figures import CATALOG
    from paper_figs.pipeline import run_counts, split_runs
    from paper_figs.records.runs import full_config
    quick = get_profile("quick")
    from gpu_runs.recipe import TrainConfig
    split = split_runs(quick, list(CATALOG))
    live = [s for v in split.values() for s in v["live"]]
    kept_runs = [s for v in split.values() for s in v["kept"]]
    key_of = lambda s: run_key(full_config(TrainConfig, s))
    line = run_counts("quick", list(split), live, kept_runs, key_of)
    distinct = len({key_of(s) for s in live + kept_runs})
    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text().split())
    said = re.search(r"the full profile has (\d+) distinct runs \(the figures use them (\d+) times\) and the "
                     r"kept records hold (\d+) of them", readme)
    uses = len(live) + len(kept_runs)
    kept_here = len({k for k in map(key_of, live + kept_runs) if KeptStore().get(k) is not None})
    assert said and [int(g) for g in said.groups()] == [distinct, uses, kept_here]   # the README counts what is there
    assert line.endswith(f"; 6 run(s) to train live, {distinct - 6} more read from the cache or kept records "
                         f"({distinct} distinct runs, {len(live) + len(kept_runs)} uses over the figures)")
    assert len(live) + len(kept_runs) > distinct                # the figures share runs


@pytest.mark.slow
def test_a_real_kept_record_replays_to_its_end():
    """The repository's AdamW record of the sampled pair, retrained for all its steps (about
    two minutes on 2 cores): every kept evaluation and the final loss within END_ATOL."""
    from paper_figs.replay import sample
    real = KeptStore()
    rec = sample([real.get(k) for k in real.keys()], 1)[0]
    assert compare_log(rec, replay(rec)) == []
