"""The other packages this one drives, resolved lazily so a missing one costs one figure.

Every dependency is looked up at run time through :class:`Deps`. A lookup that fails
raises :class:`Unavailable` carrying the reason; the pipeline turns it into
"not available: <why>" in the report for the figures that needed it and carries on.
Tests pass their own ``Deps`` (a fake trainer); the real pipeline never does.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable


class Unavailable(RuntimeError):
    """A dependency (module, function, result) is missing; ``str(self)`` says why."""


def _load(module: str, attr: str) -> Any:
    try:
        mod = importlib.import_module(module)
    except Exception as e:  # ImportError, or an error raised while importing it
        raise Unavailable(f"`{module}` could not be imported ({type(e).__name__}: {e})") from e
    try:
        return getattr(mod, attr)
    except AttributeError as e:
        raise Unavailable(f"`{module}` has no `{attr}` (yet)") from e


@dataclass
class Deps:
    """Accessors for the cross-package names of docs/interfaces.md.

    ``overrides`` maps an accessor name (``"train"``, ``"TrainConfig"``,
    ``"make_theory_figures"``, ``"run_report"``, ``"delay_price"``, ``"run_bench"``)
    to an object used instead of the import; anything else is imported on first use.
    ``real`` is False when any override is in place (the report then says so).
    """

    overrides: dict = field(default_factory=dict)

    SOURCES = {
        "train": ("gpu_runs.train", "train"),
        "TrainConfig": ("gpu_runs.train", "TrainConfig"),
        "make_theory_figures": ("verify.figures", "make_theory_figures"),
        "run_report": ("verify.report", "run_report"),
        "delay_price": ("theory.rates", "delay_price"),
        "delay_price_leading": ("theory.rates", "delay_price_leading"),
        "run_bench": ("gpu_runs.pipeline_bench", "run_bench"),
    }

    @property
    def real(self) -> bool:
        return not self.overrides

    def get(self, name: str) -> Any:
        if name in self.overrides:
            value = self.overrides[name]
            if isinstance(value, Unavailable):  # lets tests simulate a missing package
                raise value
            return value
        if name not in self.SOURCES:
            raise KeyError(f"name: unknown dependency {name!r}; known: {sorted(self.SOURCES)}")
        return _load(*self.SOURCES[name])

    def source(self, name: str) -> str:
        module, attr = self.SOURCES[name]
        return f"{module}.{attr}"

    @property
    def train(self) -> Callable:
        return self.get("train")

    @property
    def TrainConfig(self) -> type:
        return self.get("TrainConfig")
