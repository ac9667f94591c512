"""Bounds wrong on purpose, to test the verifier (docs/design.md §6: a planted wrong bound must
be caught). Built as new theory.records.bound.Bound objects from modified copies of the registered
expressions; theory itself is never edited.

* ``noise_dropped``:   derived_sync_lemma without its noise terms: L eta (1-mu)/mu.
* ``delay_dropped``:   derived_delayed_lemma with the delay term L eta removed, i.e. the
                       sync lemma claimed at y_t: noise(t) + L eta (1-mu)/mu.
* ``literal_8Leta2``:  derived_delayed_lemma with its bias L eta/mu replaced by the literal
                       reading's sqrt(8 L eta^2) (wrong for large L, i.e. rescaled f).
* ``delta_dropped``:   derived_delayed_theorem without Delta_0/(eta K).

``catching_scenario(name)`` gives a run where the mutant is false by a clear margin:
far from the minimiser with sigma = 0 the momentum lags the gradient by exactly
L eta (1-mu)/mu and the delay adds L eta (1-D quadratic, sign LMO: the drift is
linear), so the derived delayed lemma is attained.
"""
from __future__ import annotations

import dataclasses

import sympy as sp
import torch

from lmo.variants import DELAYED, SYNC
from theory.records.registry import get
from theory.records.symbols import Delta_0, K, L, eta, mu, sigma

from .noise import Gaussian
from .problems import random_quadratic, vector_quadratic


def _mutant(base_name: str, new_name: str, expr, note: str):
    b = get(base_name)
    return dataclasses.replace(b, name=new_name, expr=sp.simplify(expr), symbols=(), valid=False,
                               status="derived", note=f"MUTANT of {base_name}: {note}")


def mutants() -> dict:
    """name -> a Bound that is false (see the module docstring)."""
    sl = get("derived_sync_lemma").expr
    dl = get("derived_delayed_lemma").expr
    dt = get("derived_delayed_theorem").expr
    return {
        "noise_dropped": _mutant("derived_sync_lemma", "mutant_noise_dropped", sl.subs(sigma, 0),
                                 "noise terms dropped"),
        "delay_dropped": _mutant("derived_delayed_lemma", "mutant_delay_dropped",
                                 dl - L * eta / mu + L * eta * (1 - mu) / mu, "delay term L eta dropped"),
        "literal_8Leta2": _mutant("derived_delayed_lemma", "mutant_literal_8Leta2",
                                  dl - L * eta / mu + sp.sqrt(8 * L * eta ** 2), "bias read as sqrt(8 L eta^2)"),
        "delta_dropped": _mutant("derived_delayed_theorem", "mutant_delta_dropped",
                                 dt - Delta_0 / (eta * K), "Delta_0/(eta K) dropped"),
    }


def catching_scenario(name: str) -> dict:
    """Keyword arguments for verify.montecarlo.run under which mutant ``name`` is false."""
    from lmo.geometry import Sign, Spectral
    one_d = vector_quadratic(torch.ones((1, 1)), Sign(), x0=torch.full((1, 1), 100.0), name="line")
    if name == "noise_dropped":
        p = random_quadratic(4, 4, Spectral(), torch.Generator().manual_seed(0))
        return dict(problem=p, noise=Gaussian(1.0), variant=SYNC, lr=0.01, mu=0.1, steps=50, seeds=16)
    if name == "delay_dropped":
        return dict(problem=one_d, noise=Gaussian(0.0), variant=DELAYED, lr=0.1, mu=0.1, steps=120, seeds=2)
    if name == "literal_8Leta2":
        return dict(problem=one_d.scaled(100.0), noise=Gaussian(0.0), variant=DELAYED, lr=0.1, mu=0.5,
                    steps=60, seeds=2)
    if name == "delta_dropped":
        return dict(problem=one_d, noise=Gaussian(0.0), variant=DELAYED, lr=0.1, mu=0.1, steps=50, seeds=2)
    raise ValueError(f"name: unknown mutant {name!r}; known: {sorted(mutants())}")
