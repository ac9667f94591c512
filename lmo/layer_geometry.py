"""Scion's per-layer geometry as a Muon-family option: no parameter falls back to AdamW
(Pethick, Xie, Antonakopoulos, Zhu, Silveti-Falls, Cevher 2025, "Training deep learning
models with norm-constrained LMOs", arXiv 2502.07529; official code LIONS-EPFL/scion).

Every group takes the LMO step of its own norm from one momentum (docs/design.md §3),
with lr eta_t, the group's radius r_g and the decoupled decay of every optimizer here::

    m_t = (1 - mu) m_{t-1} + mu g_t,   u_t = mu g_t + (1 - mu) m_t  (Nesterov) or m_t
    d_t = eta_t r_g s_g(shape) lmo_g(u_t) - eta_t lambda x_t

| group    | parameters                          | lmo_g(u) (rows i, columns j)          | r_g s_g                      |
|----------|-------------------------------------|---------------------------------------|------------------------------|
| hidden   | matrices (..., m, n), experts too   | -U V^T (Newton-Schulz), = lmo.muon    | sqrt(max(1, m/n)) (Muon's)   |
| embed    | (vocab, d) token embedding          | -u_i / ||u_i||_2 per token row        | r_embed sqrt(d)              |
| head     | (vocab, d) output head              | -sign(u)   (or RowNorm: -u_i/||u_i||) | r_head / d   (r_head/sqrt(d))|
| vector   | 1-D: norm gains, biases             | -u / ||u||_2                          | r_vector sqrt(n)             |

- hidden: the spectral norm, the hidden layers' RMS->RMS geometry. It is ``lmo.muon``
  itself (same momentum, Newton-Schulz and shape factor), so the only difference between
  ``muon`` (other groups to AdamW) and ``scion`` is where the other groups go.
  ``hidden_scale="spectral"`` takes Scion's own factor sqrt(m/n) (its ``Spectral``).
- embed: ColNorm of the embedding as the linear map one-hot (vocab) -> R^d, the map
  (d x vocab) whose column j is token j's vector: its norm max_j RMS(column j) is the
  operator norm from l_1 (a one-hot input) to RMS, and its LMO sets every column to RMS 1
  along -u. On the stored (vocab, d) weight that is sqrt(d) RowNorm, as Scion's
  ``ColNorm(transpose=True)`` ("use True for embedding layers which store weights as
  (vocab_size, embedding_dim)"). A token absent from the batch has u_i = 0 and stays put.
- head: Sign, u -> sign(u)/d_in, Scion's choice for the output layer in its nanoGPT
  configuration (the max-entry geometry, every logit weight moves by the same amount);
  ``head_norm="rownorm"``: RowNorm(normalized), u_i / (sqrt(d_in) ||u_i||), the official
  code's default for non-input layers.
- vector: Scion's ``BiasRMS``, u / RMS(u): an RMS-norm ball for biases and norm gains.
- tied embedding: a model with an embedding and no separate head (gpu_runs' Llama with
  ``tied=True``) uses the embedding as the head; it gets the head's LMO and radius, as
  Scion's weight-sharing nanoGPT configuration (``lm_head``: Sign at 60 x radius).

Radii (lr scales relative to the hidden group, arguments ``embed_radius``, ``head_radius``,
``vector_radius``): the official README's nanoGPT configuration has every group at
``radius`` but the output layer at ``radius * 60`` (Sign, 1/d_in normalised); its MLP and
CNN configurations keep the input layer and BiasRMS at ``radius``. So r_embed = r_vector = 1
and r_head = 60. Scion's "constrained" step x <- (1 - gamma) x + gamma R lmo is this one
with eta = gamma R_hidden and lambda = 1 / R_hidden (R_hidden = 50 in its nanoGPT
configuration: lambda = 0.02); ``weight_decay`` = 0 is its unconstrained variant.

Momentum: one for all groups, Muon's (beta = 0.95, Nesterov); Scion's own default is
momentum = 0.1 (its ``momentum`` is our mu) without Nesterov: ``scion(mu=0.1,
nesterov=False)``. Cross-checked per group against pytorch-optimizer's ``SCION`` and
against closed forms (tests/lmo/test_scion.py).
"""
from __future__ import annotations

import math
from typing import Callable, Mapping

from lmo.muon_family import muon
from lmo.steepest_descent import lmo_momentum
from lmo.base import Optimizer, ScalarOrSchedule, check_nonneg, check_real
from lmo.hyperparameters import check_lr
from lmo.combine import partition
from lmo.geometry import L2, RowNorm, Sign

#: the parameter groups of Scion, in the order of the module docstring's table
SCION_GROUPS = ("hidden", "embed", "head", "vector")
#: substrings of a parameter name that mark a token / position embedding
EMBED_MARKERS = ("emb", "wte", "wpe")
#: substrings of a parameter name that mark the output head
HEAD_MARKERS = ("lm_head", "head", "output", "classifier", "logits")
HEAD_NORMS = ("sign", "rownorm")


def scion_labels(params: Mapping) -> dict:
    """name -> "hidden" | "embed" | "head" | "vector" (module docstring): 1-D and scalar
    parameters are "vector"; names with an embedding marker "embed", with a head marker
    "head"; other matrices "hidden". Without any "head" parameter, the embeddings are the
    tied output head: "head".

    >>> import torch
    >>> scion_labels({"wte.weight": torch.zeros(8, 4), "h.0.w": torch.zeros(4, 4), "h.0.b": torch.zeros(4),
    ...               "lm_head.weight": torch.zeros(8, 4)})
    {'wte.weight': 'embed', 'h.0.w': 'hidden', 'h.0.b': 'vector', 'lm_head.weight': 'head'}
    >>> scion_labels({"wte.weight": torch.zeros(8, 4), "h.0.w": torch.zeros(4, 4)})    # tied: the embedding is the head
    {'wte.weight': 'head', 'h.0.w': 'hidden'}
    """
    out = {}
    for k, v in params.items():
        low = k.lower()
        if v.ndim < 2:
            out[k] = "vector"
        elif any(m in low for m in EMBED_MARKERS):
            out[k] = "embed"
        elif any(m in low for m in HEAD_MARKERS):
            out[k] = "head"
        else:
            out[k] = "hidden"
    if "head" not in out.values():
        out = {k: "head" if lab == "embed" else lab for k, lab in out.items()}
    return out


class GroupScale:
    """s(shape) = radius * (sqrt(last dim) | 1 / last dim | 1 / sqrt(last dim) | 1): the
    per-shape step factor of a group (a named callable, so hyperparameters print stably).

    >>> GroupScale(60.0, "inv_d")((8, 4)), GroupScale(1.0, "sqrt_d")((8, 4))
    (15.0, 2.0)
    """

    RULES = {"sqrt_d": lambda n: math.sqrt(n), "inv_d": lambda n: 1.0 / n,
             "inv_sqrt_d": lambda n: 1.0 / math.sqrt(n), "one": lambda n: 1.0}

    def __init__(self, radius: float, rule: str):
        self.radius, self.rule = float(radius), rule

    def __call__(self, shape) -> float:
        return self.radius * self.RULES[self.rule](shape[-1] if len(shape) else 1)

    def __repr__(self) -> str:
        return f"GroupScale({self.radius!r}, {self.rule!r})"


def scion(lr: ScalarOrSchedule = 0.02, momentum: float = 0.95, nesterov: bool = True,
          weight_decay: float = 0.0, *, mu: float | None = None, embed_radius: float = 1.0,
          head_radius: float = 60.0, vector_radius: float = 1.0, head_norm: str = "sign",
          hidden_scale: str | None = None, init_momentum: str = "zero", ns_steps: int = 5,
          ns_coefficients="keller", ns_dtype="auto", exact: bool = False,
          labels: Callable[[Mapping], Mapping] | None = None) -> Optimizer:
    """Scion's per-layer LMOs with Muon's hidden group (module docstring), for a whole model.

    ``lr`` (eta_t, a number or a schedule) is the hidden group's Muon lr; the other groups
    step eta_t r_g s_g. ``momentum`` is beta (``mu`` overrides it as 1 - mu), shared by all
    groups. ``weight_decay`` lambda is decoupled, eta_t lambda x_t in every group.
    ``head_norm``: "sign" (default) or "rownorm"; ``hidden_scale``: Muon's shape factor
    (None / "original", default) or "spectral" (Scion's sqrt(m/n)). ``labels``: params ->
    {name: group} (default :func:`scion_labels`). Newton-Schulz options as lmo.muon.

    >>> import torch
    >>> opt = scion(0.1, exact=True)
    >>> x = {"h.w": torch.zeros(2, 2), "h.b": torch.zeros(4)}
    >>> d = opt.update({"h.w": torch.diag(torch.tensor([2.0, 3.0])), "h.b": torch.ones(4)}, opt.init(x), x)[0]
    >>> d["h.w"].diagonal(), d["h.b"]          # hidden: -eta polar(u); vector: -eta sqrt(n) u / ||u||_2
    (tensor([-0.1000, -0.1000]), tensor([-0.1000, -0.1000, -0.1000, -0.1000]))
    """
    check_lr(lr)
    check_nonneg(weight_decay, "weight_decay")
    for name, r in (("embed_radius", embed_radius), ("head_radius", head_radius), ("vector_radius", vector_radius)):
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not math.isfinite(r) or r <= 0:
            raise ValueError(f"{name} must be a finite number > 0, got {r!r}")
    if head_norm not in HEAD_NORMS:
        raise ValueError(f"head_norm must be one of {HEAD_NORMS}, got {head_norm!r}")
    label_fn = labels or scion_labels
    # lmo.muon checks momentum / mu (and the NS options) before the other groups are built
    hidden = muon(lr, momentum, nesterov, weight_decay, adjust_lr_fn=hidden_scale, ns_steps=ns_steps,
                  ns_coefficients=ns_coefficients, ns_dtype=ns_dtype, exact=exact, mu=mu,
                  init_momentum=init_momentum)
    mu = 1.0 - momentum if mu is None else mu
    common = dict(mu=mu, nesterov=nesterov, weight_decay=weight_decay, init_momentum=init_momentum)
    head_geometry, head_rule = (Sign(event_ndim=2), "inv_d") if head_norm == "sign" else (RowNorm(True), "one")
    rules = {
        "hidden": hidden,
        "embed": lmo_momentum(lr, RowNorm(False), scale=GroupScale(embed_radius, "sqrt_d"), matrix_only=True,
                              name="scion_embed", **common),
        "head": lmo_momentum(lr, head_geometry, scale=GroupScale(head_radius, head_rule), matrix_only=True,
                             name="scion_head", **common),
        "vector": lmo_momentum(lr, L2(event_ndim=1), scale=GroupScale(vector_radius, "sqrt_d"),
                               matrix_only=False, name="scion_vector", **common),
    }

    def labels_of(params):
        labs = dict(label_fn(params))
        unknown = sorted({lab for lab in labs.values() if lab not in rules})
        if unknown:
            raise ValueError(f"labels: unknown Scion groups {unknown}; the groups are {SCION_GROUPS}")
        return labs

    def opt_for(groups) -> Optimizer:
        return partition({g: rules[g] for g in SCION_GROUPS if g in groups}, labels_of)

    def init(params):
        check_real(params, "scion")          # named as scion, not as the group that meets it first
        return opt_for(set(labels_of(params).values())).init(params)

    def update(grads, state, params=None):
        check_real(grads, "scion", "grads")
        return opt_for(state.inner).update(grads, state, params)

    hyper = dict(lr=lr, momentum=1.0 - mu, nesterov=nesterov, weight_decay=weight_decay,
                 embed_radius=embed_radius, head_radius=head_radius, vector_radius=vector_radius,
                 head_norm=head_norm, hidden_scale=hidden_scale, ns_steps=ns_steps,
                 ns_coefficients=repr(ns_coefficients), ns_dtype=str(ns_dtype), exact=exact)
    return Optimizer(init, update, name="scion", hyper=hyper)
