"""verify: empirical, property-based and adversarial checks of the theory's bounds (docs/design.md §6.2-6.4).

Synthetic problems with certified L (verify.problems), noise models with exact sigma
(verify.noise), batched Monte Carlo of sync / delayed / EF / PipeDream-style runs
(verify.montecarlo), confidence-bound checks (verify.check), hypothesis strategies
(verify.strategies), a falsification search (verify.adversarial), planted wrong bounds
(verify.mutants), the report (``python -m verify``, verify.report.run_report) and its
figures (verify.figures.make_theory_figures). Benchmark: ``python -m verify.bench``.
"""
from .check import CheckResult, check_bound, check_run
from .montecarlo import MCResult, run, simulate

__all__ = ["CheckResult", "check_bound", "check_run", "MCResult", "run", "simulate"]
