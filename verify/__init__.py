"""verify: empirical, property-based and adversarial checks of the theory's bounds (docs/design.md §6, steps 2-4).

A short tour::

    import verify, theory
    from lmo.geometry import Spectral
    import torch
    p = verify.random_quadratic(4, 4, Spectral(), torch.Generator().manual_seed(0))
    res = verify.run(p, verify.Gaussian(0.5), "delayed", lr=0.05, mu=0.1, steps=100, seeds=64)
    c = verify.check_bound(theory.get("paper_c2_y"), res)
    c.verdict       # 'violated' | 'not violated' | 'holds confidently'
    c.tightness     # max over steps of measured mean / bound

Problems with certified L (verify.problems), noise models with exact sigma (verify.noise),
batched Monte Carlo of sync / delayed / EF / PipeDream-style runs (verify.montecarlo),
confidence-bound checks (verify.check; their coverage measured by verify.coverage.coverage,
a command, ``python -m verify.coverage``, so the package does not import it), hypothesis
strategies (verify.strategies: Instance, instances), a falsification search
(verify.adversarial.search), planted wrong bounds (verify.planted_bounds: mutants), the report
(``python -m verify``, run_report) and its figures (make_theory_figures).
"""
from .adversarial import search
from .check import VERDICTS, CheckResult, applicable, check_bound, check_run, empirical_bernstein, one_sided_t
from .montecarlo import MCResult, run, simulate
from .noise import Aligned, Anisotropic, Gaussian, StudentT, make_noise
from .planted_bounds import catching_scenario, mutants
from .problems import (CosineSum, Problem, Quadratic, random_cosine_sum, random_least_squares, random_psd,
                       random_quadratic, vector_quadratic)
from .report import run_report
from .strategies import Instance, instances


def make_theory_figures(out_dir, quick: bool = True):
    """PNG figures of measured quantities vs the bounds (verify.figures; imports matplotlib)."""
    from .figures import make_theory_figures as make
    return make(out_dir, quick)


__all__ = ["CheckResult", "VERDICTS", "check_bound", "check_run", "applicable", "one_sided_t",
           "empirical_bernstein", "MCResult", "run", "simulate", "search", "mutants",
           "catching_scenario", "Gaussian", "Anisotropic", "StudentT", "Aligned", "make_noise",
           "Problem", "Quadratic", "CosineSum", "random_quadratic", "random_least_squares", "random_psd",
           "random_cosine_sum", "vector_quadratic", "run_report", "Instance", "instances",
           "make_theory_figures"]
