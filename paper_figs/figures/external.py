"""Cached calls into the non-training packages (verify, theory, the pipeline benchmark).

``cached_call(ctx, kind, params, fn)`` runs ``fn()`` once per (kind, params) and stores its
JSON-able result under out/cache/<hash>.json, like a training run; ``--force`` reruns it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from ..records.cache import config_hash, to_jsonable
from ..records.deps import Unavailable
from .common import spec_of


def cached_call(ctx, kind: str, params: dict, fn: Callable[[], Any],
                valid: Callable[[Any], bool] = lambda r: True) -> Any:
    """The cached result of ``fn()`` for ``(kind, params)``; ``valid(result)`` may veto a
    stored result (e.g. files it names have been deleted)."""
    key = config_hash({"kind": kind, **params})
    rec = None if ctx.runner.force else ctx.cache.get(key)
    if rec is not None and valid(rec["result"]):
        return rec["result"]
    text = str(params)
    ctx.runner.log(f"[{kind}] running ({text[:120] + ' ...' if len(text) > 120 else text})")
    t0 = time.time()
    result = to_jsonable(fn())
    ctx.cache.put(key, {"kind": kind, "config": params, "result": result, "wall_s": time.time() - t0})
    ctx.runner.log(f"[{kind}] done in {time.time() - t0:.0f} s")
    return result


def dep(ctx, name: str):
    """``ctx.deps.get(name)``; raises Unavailable with the reason."""
    return ctx.deps.get(name)


__all__ = ["cached_call", "dep", "Unavailable"]


@dataclass(frozen=True)
class ExternalSpec:
    """The knob of a figure made of external calls: its calls in their quick mode (the full and
    gpu profiles run them in full)."""

    quick_external: bool = True


#: one row per profile, shared by the figures made of external calls (theory, pipeline)
SPECS = {"full": ExternalSpec(quick_external=False), "quick": ExternalSpec(),
                  "gpu": ExternalSpec(quick_external=False), "micro": ExternalSpec()}


def quick_mode_of(p, figure: str) -> bool:
    """Whether ``figure``'s external calls run in their quick mode in profile ``p``."""
    return spec_of(p, figure, SPECS).quick_external
