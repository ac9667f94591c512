"""The `Bound` record: one inequality "quantity <= expr" with its provenance.

Fields follow docs/interfaces.md. ``evaluate(**constants)`` is vectorised:
numpy arrays (or floats) broadcast against each other; if any input is a torch
tensor the computation runs in torch (dtype/device of the first tensor input)
and returns a tensor.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import sympy as sp

from .symbols import SYMBOLS

#: the recursions a bound is about: sync, the delayed update (y_t = x_t + d_{t-1}, any delay
#: tau for the trajectory bounds), delayed + error feedback. Spelled as lmo.variants spells
#: them (THEORY_VARIANTS); theory imports nothing of ours (docs/design.md §2), so the names
#: are declared here once for theory, and tests/lmo/test_variant_wrap.py keeps the two equal
SYNC, DELAYED, EF = "sync", "delayed", "ef"
VARIANTS = (SYNC, DELAYED, EF)
STATUSES = ("derived", "restated", "transmitted")
#: the momentum start every bound is stated for, named as lmo names it: "grad" is m_0 = g_0
#: (lmo's init_momentum="grad"). lmo's default "zero" (m_{-1} = 0, so m_0 = mu g_0, torch's; the kept
#: training records use it) is the other start, INIT_MOMENTA[1]: its weights sum to 1 - (1-mu)^{t+1},
#: so m_t - grad f carries an extra -(1-mu)^{t+1} grad f, outside the bounds while (1-mu)^t is not small
#: (docs/design.md §3). theory.checks.witness_runs.simulate and the certificates' relations take both.
INIT_MOMENTUM = "grad"
INIT_MOMENTA = ("grad", "zero")
QUANTITIES = {
    "momentum_error_x": "E ||m_t - grad f(x_t)||_* at step t (m_0 = g(x_0; xi_0))",
    "momentum_error_y": "E ||m_t - grad f(y_t)||_* at step t",
    "avg_grad_norm_x": "(1/K) sum_{t<K} E ||grad f(x_t)||_* (bounds E min_t)",
    "avg_grad_norm_y": "(1/K) sum_{t<K} E ||grad f(y_t)||_*",
}
SOURCES = {
    "kovalev": "restated from Kovalev 2025 (arXiv 2503.12645)",
    "paper": "transmitted from the paper (arXiv 2606.30634) via the summary",
    "derived": "derived here",
}

_TORCH_FUNCS = None


def _torch_module():
    global _TORCH_FUNCS  # a cache of a pure mapping, not state
    if _TORCH_FUNCS is None:
        import torch
        _TORCH_FUNCS = {"sqrt": torch.sqrt, "exp": torch.exp, "log": torch.log,
                        "Min": lambda *a: _reduce(torch.minimum, a),
                        "Max": lambda *a: _reduce(torch.maximum, a)}
    return _TORCH_FUNCS


def _reduce(fn, args):
    out = args[0]
    for a in args[1:]:
        out = fn(out, a)
    return out


def _is_tensor(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "dtype")


@dataclasses.dataclass(frozen=True)
class Bound:
    """``quantity <= expr`` under ``assumptions``.

    name: registry key; expr: sympy expression in the constants of
    theory.records.symbols; quantity: one of QUANTITIES; variant: sync|delayed|ef;
    assumptions: tuple of "A1".."A4"; source: provenance sentence;
    status: derived|restated|transmitted; valid: True (proved here),
    False (shown wrong or meaningless), None (unknown); symbols: names that
    evaluate needs (sorted free symbols); note: what the bound covers;
    reading: for a bound transmitted from the paper, which reading of its words this
    record tests (docs/design.md §5), empty otherwise.
    """

    name: str
    expr: sp.Expr
    quantity: str
    variant: str
    assumptions: tuple[str, ...]
    source: str
    status: str
    valid: bool | None
    symbols: tuple[str, ...] = ()
    note: str = ""
    reading: str = ""

    def __post_init__(self):
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {self.variant!r}")
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        if self.quantity not in QUANTITIES:
            raise ValueError(f"quantity must be one of {sorted(QUANTITIES)}, got {self.quantity!r}")
        names = tuple(sorted(s.name for s in self.expr.free_symbols))
        unknown = [n for n in names if n not in SYMBOLS]
        if unknown:
            raise ValueError(f"expr of {self.name!r} uses unknown symbols {unknown}")
        if not self.symbols:
            object.__setattr__(self, "symbols", names)
        elif tuple(sorted(self.symbols)) != names:
            raise ValueError(f"symbols of {self.name!r} must be {names}, got {self.symbols}")

    def evaluate(self, **constants):
        """Numeric value of ``expr`` at the given constants (broadcast).

        Every name in ``self.symbols`` is required; extra names are ignored
        (so one dict of constants can serve all bounds). Inputs may be
        floats, numpy arrays or torch tensors.
        """
        missing = [n for n in self.symbols if n not in constants]
        if missing:
            raise TypeError(f"{self.name}.evaluate missing constants {missing}")
        args = [constants[n] for n in self.symbols]
        tensors = [a for a in args if _is_tensor(a)]
        if tensors:
            import torch
            ref = tensors[0]
            dtype = ref.dtype if ref.is_floating_point() else torch.get_default_dtype()
            args = [torch.as_tensor(a, dtype=dtype, device=ref.device) for a in args]
            fn = sp.lambdify([SYMBOLS[n] for n in self.symbols], self.expr,
                             modules=[_torch_module(), "math"])
            out = fn(*args)
            if not _is_tensor(out):
                out = torch.as_tensor(out, dtype=dtype, device=ref.device)
            shape = torch.broadcast_shapes(*(a.shape for a in args)) if args else ()
            return out.expand(shape) if out.shape != shape else out
        arrs = [np.asarray(a, dtype=float) for a in args]
        fn = sp.lambdify([SYMBOLS[n] for n in self.symbols], self.expr, modules="numpy")
        out = np.asarray(fn(*arrs), dtype=float)
        shape = np.broadcast_shapes(*(a.shape for a in arrs)) if arrs else ()
        out = np.broadcast_to(out, shape).copy()
        return out if out.ndim else float(out)
