"""The sequential plan (docs/plan.md): its batches as grid changes, the runs they add, and
that every kept record of a plan run was launched from the plan's commit or a later one."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from paper_figs.plan_state import batch_runs, completed
from paper_figs.records.cache import Cache
from paper_figs.records.kept import KeptStore
from paper_figs.records.plan import BATCHES, PLAN_DOC, changes_through, through
from paper_figs.records.profiles import get_profile
from paper_figs.records.runs import launch_file, launched

ROOT = Path(__file__).resolve().parents[2]


def test_changes_merge_in_order_and_zero_is_the_profile_as_found():
    full = get_profile("full")
    assert changes_through(0) == {}
    assert through(full, 0) == full
    merged = changes_through(len(BATCHES))
    for b in BATCHES:   # the last batch that sets a knob gives its value
        for fig, knobs in b.changes.items():
            for knob, value in knobs.items():
                last = [c.changes[fig][knob] for c in BATCHES if knob in c.changes.get(fig, {})][-1]
                assert merged[fig][knob] == last
    with pytest.raises(ValueError, match="plan batch"):
        changes_through(len(BATCHES) + 1)


def test_batch_one_adds_exactly_the_declared_seeds():
    runs = batch_runs(get_profile("full"), 1)
    got = sorted((s["optimizer"], s.get("seed", 0)) for s in runs.values())
    table1 = [(o, s) for o in ("muon", "mars", "adan") for s in (4, 5) for _ in ("sync", "2bw")]
    fig2 = [(o, s) for o in ("nadam",) for s in (1, 2) for _ in ("2bw", "ef")] + [("adan", 1), ("adan", 2)]
    assert got == sorted(table1 + fig2)   # Adan's 2BW runs at seeds 1, 2 are Table 1's: only its EF runs are new


def test_launch_commit_is_recorded_once_and_read_back_on_resume(tmp_path, monkeypatch):
    cache = Cache(tmp_path / "cache")
    monkeypatch.setattr("paper_figs.records.runs.commit", lambda: "aaaa")
    first = launched(cache, "k1", resuming=False)
    assert first["launch_commit"] == "aaaa" and launch_file(cache, "k1").exists()
    monkeypatch.setattr("paper_figs.records.runs.commit", lambda: "bbbb")
    assert launched(cache, "k1", resuming=True) == first          # a resume keeps the first launch
    assert launched(cache, "k1", resuming=False)["launch_commit"] == "bbbb"   # a fresh start does not
    assert launched(cache, "k2", resuming=True)["launch_commit"].startswith("unknown")


def _git(*args) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_every_kept_plan_record_was_launched_after_the_plan_was_committed():
    """A record of a run the plan adds must carry a launch commit that is the plan's first commit
    or a descendant of it (docs/plan.md §4); a record with no launch commit is refused. Records
    that were kept at the plan's commit (another figure's runs that a batch reuses) are not the
    plan's training and are exempt."""
    if _git("rev-parse", "--is-shallow-repository") == "true":
        pytest.fail("a shallow clone: the plan's commit cannot be checked (clone with history)")
    plan_commit = _git("log", "--diff-filter=A", "--format=%H", "--", PLAN_DOC).splitlines()[-1]
    store, full = KeptStore(), get_profile("full")
    keys = {k for b in BATCHES for k in batch_runs(full, b.id)}
    bad = []
    for k in sorted(keys):
        rec = store.get(k)
        kept_before = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e",
                                      f"{plan_commit}:paper_figs/kept/{k}.json"]).returncode == 0
        if rec is None or kept_before:
            continue
        launch = (rec.get("provenance") or {}).get("launch_commit", "")
        sha = launch.split("+")[0]
        ok = bool(sha) and not launch.endswith("+dirty") and subprocess.run(
            ["git", "-C", str(ROOT), "merge-base", "--is-ancestor", plan_commit, sha]).returncode == 0
        if not ok:
            bad.append(f"{k} (launch commit {launch or 'none'})")
    assert not bad, f"plan records not launched from the plan's commit {plan_commit[:12]} or later: {bad}"
    assert 0 <= completed(full, store) <= len(BATCHES)


def test_plan_only_trains_the_batch_and_nothing_else():
    """``--plan-only``: the figure's other declared runs (Figure 5 on the small model) are read,
    not trained, so a batch's command trains exactly ``batch_runs`` (docs/plan.md §2)."""
    from paper_figs.listing import list_profile
    full = get_profile("full")
    keys = batch_runs(full, 2)
    store = KeptStore(ROOT / "paper_figs" / "kept")
    plain = list_profile(through(full, 2), only=["fig5"], kept=store, reuse_kept=True)
    only = list_profile(through(full, 2), only=["fig5"], kept=store, reuse_kept=True, train_only=set(keys))
    missing = [k for k in keys if store.get(k) is None]
    assert f"live: {len(missing)} run(s) to train" in only
    assert "small steps" not in "\n".join(l for l in only.splitlines() if l.strip().startswith("live "))
    assert "small steps" in plain      # without it the small-model runs would train too


def test_plan_only_needs_a_batch(capsys):
    from paper_figs.cli import main
    with pytest.raises(SystemExit):
        main(["--plan-only", "--list"])
    assert "--plan-only: needs --plan-batch K >= 1" in capsys.readouterr().err
