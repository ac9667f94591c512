"""The other packages this one drives, imported plainly (they live in this repository).

:class:`Deps` hands the figures the real functions (:data:`REAL`), or a test's replacement
for any of them (``Deps(overrides={...})``; a test may also pass an :class:`Unavailable`
to simulate a missing dependency, which the pipeline reports as "not available: <why>"
for the figures that need it while the others carry on). The real pipeline never
overrides anything.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import theory.results.rates
import verify.figures
import verify.report
from gpu_runs.pipeline.bench import run_bench
from gpu_runs.recipe import TrainConfig
from gpu_runs.train import train


class Unavailable(RuntimeError):
    """A dependency (function, result) is missing; ``str(self)`` says why."""


REAL: dict[str, Any] = {
    "train": train,
    "TrainConfig": TrainConfig,
    "make_theory_figures": verify.figures.make_theory_figures,
    "run_report": verify.report.run_report,
    "delay_price": theory.results.rates.delay_price,
    "run_bench": run_bench,
}
# optional: the leading-order delay price is drawn beside the exact one when theory has it
if hasattr(theory.results.rates, "delay_price_leading"):
    REAL["delay_price_leading"] = theory.results.rates.delay_price_leading
OPTIONAL = {"delay_price_leading": "`theory.results.rates` has no `delay_price_leading`"}


@dataclass
class Deps:
    """Accessors for the cross-package names (:data:`REAL`).

    ``overrides`` maps a name (``"train"``, ``"TrainConfig"``, ``"make_theory_figures"``,
    ``"run_report"``, ``"delay_price"``, ``"delay_price_leading"``, ``"run_bench"``) to an
    object used instead of the real one. ``real`` is False when any override is in place
    (the report then says so).
    """

    overrides: dict = field(default_factory=dict)

    @property
    def real(self) -> bool:
        return not self.overrides

    def get(self, name: str) -> Any:
        if name in self.overrides:
            value = self.overrides[name]
            if isinstance(value, Unavailable):  # lets tests simulate a missing package
                raise value
            return value
        if name in REAL:
            return REAL[name]
        if name in OPTIONAL:
            raise Unavailable(OPTIONAL[name])
        raise KeyError(f"name: unknown dependency {name!r}; known: {sorted(set(REAL) | set(OPTIONAL))}")

    @property
    def train(self) -> Callable:
        return self.get("train")

    @property
    def TrainConfig(self) -> type:
        return self.get("TrainConfig")
