"""The paper's figures and tables, reproduced at this machine's scale (the main job).

``python -m paper_figs --profile quick`` trains what the figures need through
``gpu_runs.train`` (cached by a hash of each run's full configuration), calls ``verify``,
``theory`` and ``gpu_runs.pipeline_bench`` for the theory and pipeline figures, and writes
``figs_out/REPORT.md``: per figure, the paper's number, this run's measurement and whether
the paper's qualitative claim holds here. API: :func:`paper_figs.pipeline.run_profile`,
:data:`paper_figs.profiles.PROFILES`, :data:`paper_figs.figures.CATALOG`.
"""
