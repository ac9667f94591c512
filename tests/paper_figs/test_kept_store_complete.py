"""The committed kept records (``paper_figs/kept/``) against the profiles that read them.

`make figs` shows the whole paper only if every run the quick profile reads from kept records
has one, and each record is what the full profile would train today: same key (the hash of
its full TrainConfig), no record left over from an older grid, trained from committed code.
A change to TrainConfig's defaults or to a grid changes keys: these tests then fail and say
which runs to retrain, instead of `make figs` quietly listing them as missing.
"""
from __future__ import annotations

import pytest

from paper_figs.records.identity import run_key
from paper_figs.records.deps import Deps
from paper_figs.figures import CATALOG
from paper_figs.keep import profile_runs
from paper_figs.records.kept import KeptStore
from paper_figs.pipeline import split_runs
from paper_figs.records.profiles import get_profile
from paper_figs.records.runs import describe, full_config


@pytest.fixture(scope="module")
def store():
    return KeptStore()


@pytest.fixture(scope="module")
def full_runs():
    return profile_runs("full")


def test_every_run_quick_reads_from_kept_records_has_one(store):
    """Every run has a kept record, except the runs the verdict protocol declared before they are
    trained (paper_figs/planned_runs.py: the full profile's runs its kept version did not have),
    which `make figs` lists as missing with the command that trains them."""
    from paper_figs.planned_runs import planned
    quick = get_profile("quick")
    TrainConfig = Deps().TrainConfig
    wanted = [s for v in split_runs(quick, list(CATALOG)).values() for s in v["kept"]]
    assert wanted, "the quick profile reads no run from kept records"
    declared = {k for _, _, k in planned()}
    missing = [describe(s) for s in wanted if store.get(k := run_key(full_config(TrainConfig, s))) is None
               and k not in declared]
    assert not missing, (f"{len(missing)} run(s) have no kept record (train them with "
                         f"`python -m paper_figs --profile full`, then `python -m paper_figs.keep`): "
                         + "; ".join(missing[:10]))


def test_no_kept_record_is_stale_and_each_names_its_key(store, full_runs):
    stale = store.stale(s["_key"] for s in full_runs)
    assert not stale, f"kept records that match no run of the full profile (`--prune`): {stale[:10]}"
    for k in store.keys():
        assert store.get(k)["key"] == k  # get() also re-hashes the config: a hand edit is refused


def test_kept_records_come_from_committed_code_of_the_full_profile(store):
    bad = []
    for k in store.keys():
        prov = store.get(k).get("provenance") or {}
        commit = str(prov.get("commit", ""))
        if not commit or commit.endswith("+dirty") or "--profile full" not in str(prov.get("command", "")):
            bad.append((k, prov.get("commit"), prov.get("command")))
    assert not bad, f"records without a clean full-profile provenance: {bad[:5]}"


def test_a_figures_verdicts_do_not_depend_on_which_other_figures_ran(tmp_path):
    """The seed spread a one-seed cell borrows is pooled over every figure of the profile, so
    `--only fig2_table2` and a run that adds the tuned-lr figures (whose 4x-lr cells have a
    ~4x wider spread) give Figure 2 the same verdicts, word for word. Kept records only."""
    from paper_figs.pipeline import run_profile

    def verdicts(only, out):
        res = run_profile(get_profile("quick"), tmp_path / out, only=only, progress=False, log=lambda s: None)
        fig2 = next(o for o in res["outputs"] if o.name == "fig2_table2")
        return {k: (v.status, v.reason) for k, v in fig2.verdicts.items()}, fig2.notes

    alone = verdicts(["fig2_table2"], "alone")
    # not vacuous: the lines' parts carry their numbers (under the protocol every Figure 2 line may be
    # undecided, but the parts' intervals and borrowed SDs are what would move if the pool depended on the
    # figures run; a claim of parts' p-values too)
    assert alone[0] and sum("95 % interval" in n and "SD borrowed" in n for n in alone[1]) >= 3
    assert verdicts(["lr_tuning", "fig3_tuned", "fig2_table2", "fig2_tuned"], "with") == alone
