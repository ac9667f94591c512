"""The stale-point model of the original PipeDream (weight stashing), for any training loop.

With P stages, the parameter block of stage s has delay tau_s = P - 1 - s (the first
stage the stalest): at step t the gradient is evaluated at the *mixed* point z_t whose
block k is x^k_{t - tau_k} (x_{<0} = x_0), and the update is applied at once::

    z_t^k = x^k_{t - tau_k},     g_t = g(z_t; xi_t),     x_{t+1} = x_t + u_t(g_t)

Usage in a loop::

    hist = ParamHistory(pipedream_delays(stage_of, P))
    for t in range(T):
        z = hist.mixed_point(x)          # block k from x_{t - tau_k}
        g = grad(z)
        d, state = opt.update(g, state, x)
        hist.push(x)                     # remember x_t
        x = apply_updates(x, d)

Relation to the update-delay model (lmo.delay.delayed): for a uniform delay tau = 1 the
two coincide after the index alignment x^{delayed}_{t+1} = x^{stale}_t (the delayed model
spends one step filling), provided the inner optimizer's weight decay is off (the
update-delay model decays x^{delayed}_t = x^{stale}_{t-1}, the stale model decays x_t).
For non-uniform delays they differ: the stale-point model mixes iterates of different
ages inside one gradient, the update-delay model never does.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import torch

from lmo.base import check_int


def pipedream_delays(stage_of: Mapping[str, int], num_stages: int) -> dict:
    """tau_k = P - 1 - stage_of[k] for every parameter k (stage 0 is the stalest)."""
    check_int(num_stages, "num_stages", 1)
    out = {}
    for k, s in stage_of.items():
        check_int(s, f"stage_of['{k}']", 0, num_stages - 1)
        out[k] = num_stages - 1 - s
    return out


def contiguous_stages(names: Sequence[str], num_stages: int) -> dict:
    """Split an ordered list of parameter names into P contiguous, nearly equal stages."""
    names = list(names)
    check_int(num_stages, "num_stages", 1, len(names))
    return {k: (i * num_stages) // len(names) for i, k in enumerate(names)}


class ParamHistory:
    """The last tau_k iterates of every block k, and the mixed stale point built from them."""

    def __init__(self, delays: Mapping[str, int]):
        for k, tau in delays.items():
            check_int(tau, f"delays['{k}']")
        self.delays = dict(delays)
        self.history: dict = {k: () for k in self.delays}   # oldest first, at most tau_k entries

    def push(self, params: Mapping[str, torch.Tensor]) -> None:
        """Record x_t (call once per step, after the gradient at step t was taken)."""
        for k, tau in self.delays.items():
            if tau:
                self.history[k] = (self.history[k] + (params[k].detach().clone(),))[-tau:]

    def mixed_point(self, params: Mapping[str, torch.Tensor]) -> dict:
        """z^k = x^k_{t - tau_k} for the current iterate x_t = ``params`` (x_{<0} = x_0)."""
        missing = set(self.delays) - set(params)
        if missing:
            raise KeyError(f"params: missing blocks {sorted(missing)[:5]} of the delay map")
        out = {}
        for k, v in params.items():
            h = self.history.get(k, ())
            out[k] = h[0] if h else v
        return out

    def state_dict(self) -> dict:
        """{"k/i": tensor} (i = 0 oldest); restore with :meth:`load_state_dict`."""
        return {f"{k}/{i}": x.clone() for k, h in self.history.items() for i, x in enumerate(h)}

    def load_state_dict(self, flat: Mapping[str, torch.Tensor]) -> None:
        hist = {k: [] for k in self.delays}
        for key in sorted(flat, key=lambda s: (s.rsplit("/", 1)[0], int(s.rsplit("/", 1)[1]))):
            k, _ = key.rsplit("/", 1)
            if k not in hist:
                raise KeyError(f"state_dict: block '{k}' is not in the delay map")
            hist[k].append(flat[key].clone())
        for k, h in hist.items():
            if len(h) > self.delays[k]:
                raise ValueError(f"state_dict: {len(h)} entries for '{k}' but its delay is {self.delays[k]}")
        self.history = {k: tuple(h) for k, h in hist.items()}
