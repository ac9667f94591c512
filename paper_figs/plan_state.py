"""Which of the sequential plan's batches are whole: the runs each batch adds and the number of
leading batches whose runs are all kept (docs/plan.md §2). The figures, the error-rate simulation
and ``python -m paper_figs.allocate`` read the full profile through :func:`completed` batches, so a
batch enters the verdicts whole, as one interim look."""
from __future__ import annotations

from .figures import CATALOG
from .figures.common import figure_runs
from .records.deps import Deps
from .records.kept import KeptStore
from .records.plan import BATCHES, BY_ID, through
from .records.profiles import Profile
from .records.runs import Runner


def _keys(profile: Profile, figures, runner: Runner) -> dict:
    return {runner.key_of(s): s for n in figures if profile.runs_figure(n) for s in figure_runs(CATALOG[n], profile)}


def batch_runs(base: Profile, k: int) -> dict:
    """{key: settings} of the runs batch ``k`` adds to its figures in ``base`` (the full profile):
    those its figures have through batch k and not through batch k - 1. Some may be kept already
    (another figure's runs, e.g. Figure 3's 1500-step runs in Figure 5's new seed): the batch is
    complete when all are kept."""
    runner, figs = Runner(Deps(), None), BY_ID[k].figures
    before = _keys(through(base, k - 1), figs, runner)
    return {key: s for key, s in _keys(through(base, k), figs, runner).items() if key not in before}


def completed(base: Profile, store: KeptStore) -> int:
    """The number of leading batches whose runs are all kept (0: none)."""
    for b in BATCHES:
        if any(store.get(key) is None for key in batch_runs(base, b.id)):
            return b.id - 1
    return len(BATCHES)
