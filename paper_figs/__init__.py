"""The paper's figures and tables, reproduced at this machine's scale (the main job).

``python -m paper_figs --profile quick`` shows every figure and table: it trains Figure 3's
headline runs live through ``gpu_runs.train`` (cached by a hash of each run's full
configuration, so a killed invocation resumes), reads every other run from the kept
records of the ``full`` profile (``paper_figs/kept/``, made by ``python -m paper_figs.keep``),
calls ``verify``, ``theory`` and ``gpu_runs.pipeline.bench`` for the theory and pipeline
figures, and writes ``figs_out/REPORT.md`` (the front page) with a page per figure
(``figs_out/figures/NAME.md``) and ``runs.csv`` / ``curves.csv``: per figure, the paper's number, this run's
measurement, whether the paper's qualitative claim holds here, and for every run whether
it was trained live, read from the cache or kept (with its provenance). API:
:func:`paper_figs.pipeline.run_profile`, :data:`paper_figs.records.profiles.PROFILES`,
:data:`paper_figs.figures.CATALOG`, :class:`paper_figs.records.kept.KeptStore`.
"""
