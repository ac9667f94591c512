"""End to end on the micro profile with the fake trainer: every figure, the report, the cache."""
from __future__ import annotations

import json

import pytest
from paper_figs_fakes import FakeTrainer, fake_deps, knobs, profile_with

from paper_figs.records.deps import Unavailable
from paper_figs.figures import CATALOG
from paper_figs.pipeline import run_profile
from paper_figs.records.profiles import get_profile


def _quiet(_):
    pass


@pytest.fixture(scope="module")
def micro_run(tmp_path_factory):
    from paper_figs.figures import plotting
    out = tmp_path_factory.mktemp("figs")
    trainer = FakeTrainer()
    plotting.DEFECTS.clear()
    first = run_profile(get_profile("micro"), out, deps=fake_deps(trainer), log=_quiet)
    return out, trainer, first, dict(plotting.DEFECTS)


def test_every_figure_reads_as_a_reader_would_see_it(micro_run):
    """Issue 51 item 3: every figure the main job draws (micro profile, fake numbers, the same code)
    has no text cut by its edge, no overlapping titles, labels or tick labels, and axis labels
    on every plotted axes (paper_figs.figures.plotting.layout_defects)."""
    defects = micro_run[3]
    assert defects, "no figure was checked"
    bad = {stem: found for stem, found in defects.items() if found}
    assert not bad, bad


def test_every_figure_renders_files_and_report(micro_run):
    out, trainer, first, _ = micro_run
    assert trainer.calls > 0
    outputs = {o.name: o for o in first["outputs"]}
    assert set(outputs) == set(CATALOG)
    for name, o in outputs.items():
        assert o.status == "done", (name, o.status, o.missing)
        assert o.files, name
        for f in o.files:
            assert f.exists() and f.stat().st_size > 0, f
        assert any(str(f).endswith(".pdf") for f in o.files) or name == "theory" and len(o.files) >= 2
    report = (out / "REPORT.md").read_text()
    # the front page: a table of contents, the summary grouped by status, a page per figure linked both ways
    assert "## Contents" in report and "### Inconclusive (" in report
    assert len(report.encode()) <= 40_000, len(report.encode())   # a front page, every figure's detail elsewhere
    for name, o in outputs.items():
        page = out / "figures" / f"{name}.md"
        assert f"(figures/{name}.md)" in report and page.exists(), name
        text = page.read_text()
        assert f"(../REPORT.md#fig-{name})" in text and f'<a id="fig-{name}"></a>' in report
        assert all(f"{k}: {v}" in text for k, v in o.verdicts.items())  # every line whole on its page
    # the report opens with the confirmatory table: every claim of the family, before any detail
    head = report.split("## Horizon")[0]
    assert head.index("## The paper's claims: the confirmatory family") < head.index("Verdict rules")
    from paper_figs.statistics.protocol import FAMILY
    assert all(f"| {c.id} | {c.paper} |" in head for c in FAMILY)
    for o in outputs.values():
        assert o.title in report and o.title in (out / "figures" / f"{o.name}.md").read_text()
        for v in o.verdicts.values():  # micro verdicts never claim anything
            assert v.status == "inconclusive" and "micro profile" in v.reason
    assert "test doubles" in report and "`train`" in report  # says its numbers are not measurements
    assert "## Transcription ambiguities" in report and "8 (L eta)^2" in report
    assert (out / "tables" / "table1.csv").stat().st_size > 0


def test_second_invocation_trains_nothing(micro_run):
    out, _, first, _ = micro_run
    trainer = FakeTrainer()
    second = run_profile(get_profile("micro"), out, deps=fake_deps(trainer), log=_quiet)
    assert trainer.calls == 0 and second["runner"].trained == 0
    records = [json.loads(f.read_text()) for f in (out / "cache").glob("*.json")]
    assert first["runner"].trained == sum(r["kind"] == "train" for r in records)


def test_changed_setting_reruns_only_what_it_touches(micro_run):
    out, _, first, _ = micro_run
    p = get_profile("micro")
    trainer = FakeTrainer()
    more_seeds = profile_with(p.name, seeds_main=knobs(p).seeds_main + (7,))
    run_profile(more_seeds, out, only=["fig3"], deps=fake_deps(trainer), log=_quiet)
    assert trainer.calls == 6  # 2 optimizers x (sync, 2bw, ef) for the new seed only


def test_report_names_the_reading_each_verdict_tests(micro_run):
    """Figure 2's caption is judged as 'most' beside the stricter 'every'; Figure 4 names the swept beta."""
    outputs = {o.name: o for o in micro_run[2]["outputs"]}
    fig2 = list(outputs["fig2_table2"].verdicts)
    assert any(k.startswith("Figure 2's caption: for most optimizers") for k in fig2)
    assert any(k.startswith("EF beats synchronous start, every optimizer") for k in fig2)
    fig4 = outputs["fig4"]
    assert any(n.startswith("The momentum swept (the reading this figure tests): AdamW: betas[0]") for n in fig4.notes)
    assert any("synchronous run's own final loss at each momentum" in m for m in fig4.measured)


def test_missing_trainer_is_reported_not_faked(tmp_path):
    deps = fake_deps(train=Unavailable("`gpu_runs.train` could not be imported (test)"))
    res = run_profile(get_profile("micro"), tmp_path, only=["fig3", "table1", "pipeline"], deps=deps, log=_quiet)
    status = {o.name: o.status for o in res["outputs"]}
    assert status["fig3"].startswith("not available") and "could not be imported" in status["fig3"]
    assert status["table1"].startswith("not available")
    assert status["pipeline"] == "done"
    assert not [f for f in (tmp_path / "figures").glob("fig3*") if f.suffix != ".md"]   # no image faked
    assert "Status: not available" in (tmp_path / "figures" / "fig3.md").read_text()   # its page says why
    assert "not available" in (tmp_path / "REPORT.md").read_text()


def test_profile_leaves_figures_out_explicitly(tmp_path):
    p = get_profile("micro", figures=("fig3",))
    res = run_profile(p, tmp_path, deps=fake_deps(), log=_quiet)
    status = {o.name: o.status for o in res["outputs"]}
    assert status["fig3"] == "done"
    assert all(s == "not run in this profile" for n, s in status.items() if n != "fig3")
    assert "not run in this profile" in (tmp_path / "REPORT.md").read_text()


def test_parallel_workers_fill_the_same_cache(tmp_path):
    """jobs=2 (what quick uses): spawned workers train and cache; the parent then reads them."""
    from paper_figs_fakes import fake_deps as factory

    from paper_figs.records.cache import Cache
    from paper_figs.figures import fig3
    from paper_figs.figures.common import figure_runs
    from paper_figs.records.runs import Runner

    p = profile_with("micro", seeds_main=(0,))
    settings = figure_runs(fig3, p)
    runner = Runner(fake_deps(), Cache(tmp_path), jobs=2, threads=1, log=_quiet, worker_deps=factory)
    outs = runner.run_all(settings)
    assert all(o.ok and o.trained for o in outs) and runner.trained == len(settings) == 6
    assert len(list(tmp_path.glob("*.json"))) == 6
    again = Runner(fake_deps(FakeTrainer()), Cache(tmp_path), log=_quiet)
    assert all(o.ok for o in again.run_all(settings)) and again.trained == 0


def test_real_trainer_micro_every_mode_and_cache(tmp_path):
    """The real gpu_runs.train at micro size through the figures that use every mode
    (sync, 2bw, 2bw+EF, sync start / cool-down, DC-ASGD, pipedream); a second invocation
    calls the trainer zero times."""
    from gpu_runs.recipe import TrainConfig
    from gpu_runs.train import train

    calls = []

    def counting_train(cfg, progress=True):
        calls.append(cfg)
        return train(cfg, progress=False)

    deps = fake_deps(train=counting_train, TrainConfig=TrainConfig)
    only = ["fig3", "fig2_table2", "fig6"]
    p = profile_with("micro", seeds_main=(0,))
    first = run_profile(p, tmp_path, only=only, deps=deps, log=_quiet)
    n = len(calls)
    assert n == first["runner"].trained > 0
    for o in first["outputs"]:
        assert o.status == "done", (o.name, o.status, o.missing)
        assert all(f.stat().st_size > 0 for f in o.files)
    assert {c.delay.kind for c in calls} == {"sync", "2bw", "ef", "pipedream"}
    assert any(c.delay.sync_start for c in calls)
    assert any(c.delay.sync_cooldown for c in calls) and any(c.delay.dc_asgd for c in calls)
    run_profile(p, tmp_path, only=only, deps=deps, log=_quiet)
    assert len(calls) == n


def test_a_failing_run_costs_only_itself_and_reruns_next_time(tmp_path):
    """Run 3 of fig3 raises: the others are cached, the figure says which run is missing,
    and the next invocation trains only that run."""
    p = profile_with("micro", seeds_main=(0,))
    inner = FakeTrainer()

    def flaky(cfg, progress=True):
        if inner.calls == 2:
            inner.calls += 1
            raise RuntimeError("simulated crash")
        return inner(cfg, progress)

    res = run_profile(p, tmp_path, only=["fig3"], deps=fake_deps(flaky), log=_quiet)
    fig = res["outputs"][0]
    assert fig.status == "partial" and len(fig.missing) == 1 and "simulated crash" in fig.missing[0]
    again = FakeTrainer()
    res2 = run_profile(p, tmp_path, only=["fig3"], deps=fake_deps(again), log=_quiet)
    assert again.calls == 1 and res2["outputs"][0].status == "done"


def test_a_run_killed_mid_way_resumes_from_its_checkpoint(tmp_path):
    """The real trainer at micro size: a run killed after 6 of 8 steps (checkpointed at its
    step-4 evaluation) resumes from there, says so, and ends exactly where an uninterrupted
    run ends; its run directory is gone once the result is cached."""
    from gpu_runs.recipe import TrainConfig
    from gpu_runs.train import train

    from paper_figs.figures.common import variant
    from paper_figs.replay import stop_after
    from paper_figs.records.runs import Runner, run_dir

    from paper_figs.records.cache import Cache
    deps = fake_deps(train=train, TrainConfig=TrainConfig)
    s = variant(get_profile("micro", steps=8), "adamw", "ef", seed=0)  # evaluated at 4 and 8
    ref = Runner(deps, Cache(tmp_path / "ref"), log=_quiet, progress=False).run_all([s])[0]
    cache, lines = Cache(tmp_path / "out" / "cache"), []
    with stop_after(6):
        killed = Runner(deps, cache, log=_quiet, progress=False).run_all([s])[0]
    assert not killed.ok and (run_dir(cache, killed.key) / "ckpt.pt").exists()
    again = Runner(deps, cache, log=lines.append, progress=False).run_all([s])[0]
    assert again.ok and again.final == ref.final
    assert cache.get(again.key)["resumed"] is True
    assert any("from a checkpoint a killed attempt left" in ln for ln in lines), lines
    assert any("resuming (from the checkpoint in" in ln for ln in lines), lines
    assert not run_dir(cache, again.key).exists()
