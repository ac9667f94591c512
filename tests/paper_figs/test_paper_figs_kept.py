"""Kept records: compact form, promotion from a cache, the report's live / kept marking, the
"resuming" message, and the replay of a kept run's first steps against its kept log."""
from __future__ import annotations

import json

import pytest
from paper_figs_fakes import FakeTrainer, fake_deps, profile_with

from paper_figs.records.cache import Cache, config_hash
from paper_figs.keep import promote
from paper_figs.records.kept import HEAD_STEPS, KeptError, KeptStore, compact
from paper_figs.pipeline import run_profile
from paper_figs.records.profiles import get_profile
from paper_figs.replay import compare_head, replay_head, sample


def _quiet(_):
    pass


def _record(steps=1500, eval_every=100, log_every=10):
    config = {"optimizer": "adamw", "steps": steps, "seed": 0, "config": "tiny"}
    log = []
    for step in range(1, steps + 1):
        is_eval = step % eval_every == 0
        if is_eval or step % log_every == 0:
            row = {"step": step, "train_loss": 3.0 - step * 1e-4, "lr": 1e-3, "tokens": step * 2048,
                   "step_time": 0.07}
            if is_eval:
                row["val_loss"] = 3.1 - step * 1e-4
            log.append(row)
    return {"key": config_hash(config), "kind": "train", "config": config, "settings": config,
            "result": {"final_val_loss": log[-1]["val_loss"], "log": log}, "wall_s": 100.0,
            "provenance": {"command": "python -m paper_figs --profile full", "commit": "abc",
                           "machine": "test", "finished_at": "2026-12-03 12:00 UTC"}}


def test_compact_record_is_small_and_keeps_what_the_figures_and_the_replay_need(tmp_path):
    rec = _record()
    store = KeptStore(tmp_path)
    path = store.put(compact(rec))
    assert path.stat().st_size < 6000  # a 1500-step run: a few KB
    back = store.get(rec["key"])
    evals = [r for r in rec["result"]["log"] if "val_loss" in r]
    assert [r["val_loss"] for r in back["result"]["log"]] == [r["val_loss"] for r in evals]
    assert [r["step"] for r in back["result"]["head"]] == [10, 20, 30] and HEAD_STEPS == 30
    assert back["provenance"]["commit"] == "abc" and back["result"]["final_val_loss"] == evals[-1]["val_loss"]
    # a record whose config no longer hashes to its key is refused, not used
    text = json.loads(path.read_text())
    text["config"]["steps"] = 3000
    path.write_text(json.dumps(text))
    with pytest.raises(KeptError, match="does not hash"):
        store.get(rec["key"])


def _quick_like():
    """micro-sized, with quick's split: Figure 3's seed-0 runs live, the rest kept."""
    return get_profile("micro", live_figures=("fig3",), live_seeds=(0,), kept_profile="micro")


def test_quick_reads_kept_records_marks_them_and_reports_missing_ones(tmp_path):
    # 1. the "full" run: everything live into a cache, then promoted into kept records
    full_out = tmp_path / "full"
    run_profile(get_profile("micro"), full_out, only=["fig3", "table1"], deps=fake_deps(), log=_quiet,
                kept=KeptStore(tmp_path / "none"))
    store = KeptStore(tmp_path / "kept")
    res = promote(full_out / "cache", store, None)
    assert res["new"] and not res["updated"] and len(store.keys()) == len(res["new"])
    assert promote(full_out / "cache", store, None)["unchanged"] == res["new"]  # idempotent

    # 2. the quick run: trains only Figure 3's seed-0 runs, reads the rest from the kept records
    trainer, lines = FakeTrainer(), []
    out = run_profile(_quick_like(), tmp_path / "quick", only=["fig3", "table1"], deps=fake_deps(trainer),
                      log=lines.append, kept=store)
    assert trainer.calls == 6
    by = {o.name: o for o in out["outputs"]}
    assert by["fig3"].status == "done" and by["table1"].status == "done"
    assert {o.source for o in by["fig3"].runs} == {"live", "kept"}
    assert all(o.source in ("live", "kept") for o in by["table1"].runs)
    live = [o for o in by["fig3"].runs if o.source == "live"]
    assert all(o.kept is not None for o in live)  # the live retrain is compared with its kept record
    report = (tmp_path / "quick" / "REPORT.md").read_text()
    fig3_page = (tmp_path / "quick" / "figures" / "fig3.md").read_text()
    assert "kept records (`paper_figs/kept/`)" in report and "trained live by this invocation" in report
    assert "live+kept" in fig3_page  # Figure 3's rows mix a live and a kept seed
    assert "trained by `python -m paper_figs --profile micro` at commit" in fig3_page  # provenance footnote
    assert ("6 run(s) trained here also have a kept record of the same configuration (same corpus sha256 "
            "included): largest |final val loss here - kept| = 0.0000") in report
    assert "WARNING" not in report

    # 2b. a kept twin that disagrees beyond the tolerance opens the report with a warning naming it
    from paper_figs.records.kept import seal
    shift = 0.5   # beyond any regime's tolerance (twice its measured cross-machine spread; 0.01 unmeasured)
    twin = store.get(live[0].key)
    twin["result"]["final_val_loss"] += shift
    store.put(seal(twin))
    run_profile(_quick_like(), tmp_path / "quick", only=["fig3"], deps=fake_deps(FakeTrainer()),
                log=_quiet, kept=store)
    top = (tmp_path / "quick" / "REPORT.md").read_text().split("## Horizon")[0]
    assert "WARNING: 1 run(s) trained here differ from their kept record" in top
    assert f"({-shift:+.4f}; tolerance" in top and "Likely cause" in top

    # 3. no kept records: the kept runs are reported missing with the command, never faked
    trainer = FakeTrainer()
    out = run_profile(_quick_like(), tmp_path / "bare", only=["fig3", "table1"], deps=fake_deps(trainer),
                      log=_quiet, kept=KeptStore(tmp_path / "empty"))
    by = {o.name: o for o in out["outputs"]}
    assert trainer.calls == 6
    assert by["fig3"].status == "partial" and len(by["fig3"].missing) == 6
    assert by["table1"].status == "partial"  # its tiny AdamW/Muon seed-0 cells are Figure 3's live runs
    table1_page = (tmp_path / "bare" / "figures" / "table1.md").read_text()   # the missing runs: on its page
    assert "no kept record; produce it with `make figs PROFILE=full`" in table1_page
    assert "python -m paper_figs.keep" in table1_page
    assert "this figure's runs alone: `python -m paper_figs --profile full --only table1`" in table1_page


def test_a_killed_invocation_resumes_from_the_cache_and_says_so(tmp_path):
    p = profile_with("micro", seeds_main=(0,))
    inner = FakeTrainer()

    def killed_after_two(cfg, progress=True):
        if inner.calls == 2:
            raise KeyboardInterrupt  # the user's Ctrl-C in the third run
        return inner(cfg, progress)

    with pytest.raises(KeyboardInterrupt):
        run_profile(p, tmp_path, only=["fig3"], deps=fake_deps(killed_after_two), log=_quiet)
    lines, again = [], FakeTrainer()
    run_profile(p, tmp_path, only=["fig3"], deps=fake_deps(again), log=lines.append)
    assert again.calls == 4
    assert any("2 of 6 runs cached, resuming: 4 to train" in ln for ln in lines), lines
    lines = []
    run_profile(p, tmp_path, only=["fig3"], deps=fake_deps(FakeTrainer()), log=lines.append)
    assert any("6 of 6 runs cached, nothing to train" in ln for ln in lines), lines


def _replay_ok(rec, steps):
    rows = replay_head(rec, steps)
    assert max(r["step"] for r in rows) <= steps  # the trainer was stopped after the prefix
    diffs = compare_head(rec, rows, steps)
    assert diffs == [], (rec["key"], rec["settings"], diffs)


def test_replay_matches_kept_logs_micro_and_real_records(tmp_path):
    """Retrain the first steps of kept runs and match the kept logs: always a micro record
    produced here by the real trainer (AdamW sync, Muon delayed + EF), and a sample of the
    repository's kept records when there are any. A changed number is caught."""
    from gpu_runs.recipe import TrainConfig
    from gpu_runs.train import train

    from paper_figs.figures import fig3
    from paper_figs.figures.common import variant
    p = get_profile("micro", steps=8)  # evaluated at steps 4 and 8; the replay stops after 4
    settings = [variant(p, "adamw", "sync", seed=0), variant(p, "muon", "ef", seed=0)]
    assert fig3.NAME == "fig3"
    from paper_figs.records.runs import Runner
    deps = fake_deps(train=train, TrainConfig=TrainConfig)
    runner = Runner(deps, Cache(tmp_path / "cache"), log=_quiet, progress=False)
    outs = runner.run_all(settings)
    assert all(o.ok for o in outs), [o.error for o in outs]
    store = KeptStore(tmp_path / "kept")
    from paper_figs.keep import main as keep_main
    assert keep_main(["--out", str(tmp_path), "--kept", str(store.root), "--all",
                      "--check", "2", "--check-steps", "4"]) == 0  # promotes, then replays both
    assert sorted(store.keys()) == sorted(o.key for o in outs)
    for o in outs:
        rec = store.get(o.key)
        assert [r["step"] for r in rec["result"]["head"]] == [4, 8]
        _replay_ok(rec, 4)
    # the check can fail: a kept loss moved by 1e-3 is caught
    rec = store.get(outs[0].key)
    rec["result"]["head"][0]["train_loss"] += 1e-3
    assert compare_head(rec, replay_head(rec, 4), 4)

    real = KeptStore()
    records = [real.get(k) for k in real.keys()]
    for rec in sample(records, 2):
        _replay_ok(rec, 20)


def test_replay_sample_is_deterministic_and_prefers_the_headline_pair():
    def rec(key, opt, cfg):
        return {"key": key, "config": {"optimizer": opt, "config": cfg}}
    recs = [rec("a1", "lion", "tiny"), rec("b2", "muon", "small"), rec("c3", "muon", "tiny"),
            rec("d4", "adamw", "small"), rec("e5", "adamw", "tiny"), rec("f6", "soap", "tiny")]
    assert [r["key"] for r in sample(recs, 2)] == ["e5", "c3"]
    assert [r["key"] for r in sample(recs[::-1], 3)] == ["e5", "c3", "a1"]
    assert sample([], 2) == []


def test_list_counts_present_missing_and_stale_kept_records(tmp_path):
    from paper_figs.figures import CATALOG
    from paper_figs.listing import list_profile
    from paper_figs.pipeline import split_runs
    from paper_figs.records.runs import full_config
    from gpu_runs.recipe import TrainConfig
    quick = get_profile("quick")
    store = KeptStore(tmp_path)
    kept_runs = [s for v in split_runs(quick, list(CATALOG)).values() for s in v["kept"]]
    s = kept_runs[0]
    full = full_config(TrainConfig, s)
    rec = {"key": config_hash(full), "config": full, "settings": s,
           "result": {"final_val_loss": 2.0, "log": [{"step": 1500, "val_loss": 2.0}]}}
    store.put(compact(rec))
    stale = dict(rec, config={**full, "steps": 7}, key=config_hash({**full, "steps": 7}))
    store.put(compact(stale))
    text = list_profile(quick, kept=store)
    # 148 + 18 MoE + 66 (Figure 4 lr grid and Lion betas[1], lr_tuning at x0.5 / x2) + 11 (lr_tuning at x4)
    # + 18 theory_training + 35 (lr_tuning at x8, and 2BW over the grid for every optimizer)
    # + 14 (Figure 2's mitigation sweep) + 12 (Table 1's Adan and Lion cells at 4 seeds)
    # + 54 (Figure 2's sweep at seeds 1-2, with the sync / 2BW / EF runs it is measured against)
    # + 4 (Adan and MARS at x16) + 27 (held-out seeds 1-3 at the tuned lrs, fig3_tuned, Muon's end lrs)
    # + 34 (fig2_tuned: four mitigations x nine optimizers, less AdamW's and Muon's EF, fig3_tuned's)
    # + 64 (the verdict protocol's runs, paper_figs/planned_runs.py: Figure 5 on the small model, grid extensions)
    # + 93 (the correctors figure: tau 2 / 4 / 8, the correctors at tau 1 and 4, the attribution, scion; 3 seeds)
    # + 12 (the published Nesterov corrector: NAdamW and Muon at momentum 0.99, tau 1 and 4, 3 seeds; issue 51)
    # + 6 (its synchronous baseline: NAdamW and Muon at momentum 0.99, sync, 3 seeds)
    assert "kept: 616 run(s) read from paper_figs/kept/ (or the cache), 1 present, 615 missing" in text
    assert "1 kept record(s) in" in text and "match no run of this profile" in text


def test_provenance_dirty_means_code_changed_not_new_kept_records(tmp_path, monkeypatch):
    """A finished run promoted into paper_figs/kept/ must not mark the next runs '+dirty'
    (they are results); an uncommitted change in a code directory must."""
    import subprocess

    from paper_figs.records import provenance

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    (tmp_path / "paper_figs" / "kept").mkdir(parents=True)
    (tmp_path / "paper_figs" / "figure.py").write_text("x = 1\n")
    git("init", "-q")
    git("-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "c")
    monkeypatch.setattr(provenance, "REPO", tmp_path)

    def fresh():
        provenance.commit.cache_clear()
        return provenance.commit()

    assert not fresh().endswith("+dirty")
    (tmp_path / "paper_figs" / "kept" / "0123.json").write_text("{}")
    assert not fresh().endswith("+dirty")
    (tmp_path / "paper_figs" / "figure.py").write_text("x = 2\n")
    assert fresh().endswith("+dirty")
    provenance.commit.cache_clear()


def test_a_kept_result_edited_by_hand_is_refused_everywhere(tmp_path, monkeypatch, capsys):
    """The probe of the record-integrity issue: tiny MARS 2bw's final loss changed by hand in a
    copy of the kept store. get() refuses it by name, `keep --check` and `paper_figs --list`
    exit 1, and so does `make figs` (paper_figs.cli) before running anything."""
    import shutil

    from paper_figs import cli
    from paper_figs.records import kept
    from paper_figs.keep import main as keep_main
    real = KeptStore()
    mars = next(real.get(k) for k in real.keys()
                if real.get(k)["settings"].get("optimizer") == "mars" and real.get(k)["settings"].get("mode") == "2bw"
                and real.get(k)["settings"].get("config") == "tiny")
    copy = tmp_path / "kept"
    shutil.copytree(real.root, copy)
    store = KeptStore(copy)
    assert store.broken() == []
    p = store.path(mars["key"])
    text = p.read_text()
    old = json.dumps(mars["result"]["final_val_loss"])
    assert text.count(old) >= 1
    p.write_text(text.replace(f'"final_val_loss": {old}', '"final_val_loss": 1.4236', 1))
    with pytest.raises(kept.KeptError, match="does not match its sha256"):
        store.get(mars["key"])
    assert len(store.broken()) == 1
    assert keep_main(["--out", str(tmp_path / "nowhere"), "--kept", str(copy), "--check", "1"]) == 1
    monkeypatch.setattr(kept, "KEPT_DIR", copy)
    monkeypatch.setattr(kept.KeptStore.__init__, "__defaults__", (copy,))
    assert cli.main(["--list", "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert mars["key"] in err and "refused" in err
    # invalid JSON: refused the same way, never counted as a missing run
    p.write_text("{not json")
    assert "unreadable" in store.broken()[0]


def test_keep_check_runs_on_a_fresh_clone_without_a_cache(tmp_path, capsys):
    """`keep --check` replays kept records against their own logs when there is no cache."""
    from paper_figs.keep import main as keep_main
    assert keep_main(["--out", str(tmp_path / "none"), "--check", "1", "--check-steps", "3"]) == 0
    assert "matches its kept log" in capsys.readouterr().out


def test_a_diagnostics_request_reads_the_kept_twin_and_leaves_the_live_outcome_the_runs(tmp_path):
    """Issue 47 item 1: a figure that asks for the diagnostics of a run this invocation trained
    live without them (theory_training's twins of Figure 3's runs) reads them from the kept twin,
    and every later request, table and the live-vs-kept check still see the live run."""
    from paper_figs.records.runs import Runner
    from paper_figs.records.kept import seal
    run = dict(config="tiny", optimizer="muon", mode="2bw", steps=4, seed=0, batch_size=2, seq_len=16,
               eval_every=2, device="cpu")
    diag = dict(run, diag_every=2)
    first = Runner(fake_deps(), Cache(tmp_path / "full" / "cache"), progress=False, log=_quiet)
    first.run_all([diag])
    store = KeptStore(tmp_path / "kept")
    promote(tmp_path / "full" / "cache", store, None)
    (key,) = store.keys()
    twin = store.get(key)
    twin["result"]["final_val_loss"] += 0.5      # the kept twin disagrees with what is trained live
    store.put(seal(twin))

    r = Runner(fake_deps(), Cache(tmp_path / "quick" / "cache"), progress=False, log=_quiet, kept=store)
    (live,) = r.run_all([run])
    assert live.source == "live" and live.kept is not None and live.kept["key"] == key
    (asked,) = r.run_all([diag], train=False)
    assert asked.source == "kept" and asked.final == store.get(key)["result"]["final_val_loss"] != live.final
    (again,) = r.run_all([run], train=False)
    assert again is live and r.outcomes[key] is live     # the live outcome was not replaced


def test_list_with_reuse_kept_lists_a_recorded_live_run_as_kept(tmp_path):
    """``--list --reuse-kept`` says what ``--reuse-kept`` will do: a run the profile trains
    live but that has a kept record is read, not trained (the listing counted it live)."""
    from paper_figs.listing import list_profile
    from paper_figs.pipeline import split_runs
    from paper_figs.records.runs import full_config
    from gpu_runs.recipe import TrainConfig
    full = get_profile("full")
    live = split_runs(full, ["table1"])["table1"]["live"]
    s = live[0]
    cfg = full_config(TrainConfig, s)
    store = KeptStore(tmp_path)
    store.put(compact({"key": config_hash(cfg), "config": cfg, "settings": s,
                       "result": {"final_val_loss": 2.0, "log": [{"step": 1500, "val_loss": 2.0}]}}))
    plain = list_profile(full, only=["table1"], kept=store)
    reused = list_profile(full, only=["table1"], kept=store, reuse_kept=True)
    n = len({repr(sorted(r.items())) for r in live})
    assert f"live: {n} run(s) to train" in plain and "kept: 0 run(s)" in plain
    assert f"live: {n - 1} run(s) to train" in reused
    assert "kept: 1 run(s) read from paper_figs/kept/ (or the cache), 1 present, 0 missing" in reused
