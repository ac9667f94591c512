"""The paper's training protocol, and one record per optimizer: its constructor, preset peak
lr and momentum, and the facts the rest of the package asks about it.

``PAPER_PROTOCOL``: from the paper's stated setup (its summary; paper_figs/statistics/paper_numbers.py
lists each number with its source): weight decay 0.1, gradient clipping at global norm 1.0,
warmup for 10% of the budget, cosine decay to 0.1 x peak. (The 10B MoE run states a peak lr
of 0.00225; the summary gives no per-optimizer peak lrs for the 135M / 360M runs.)

``PRESETS[name]``: a :class:`Preset`, the optimizer's one record (adding an optimizer is
one entry here; lmo.registry lists and builds from it, docs/interfaces.md "How to add an
optimizer"). The tables the other packages read are views of the records, by field:
``DEFAULT_LR`` (a starting peak lr for small Llama-style models, ~100M-400M params, under
the protocol), ``LR_SOURCE`` (where each number comes from; several are guesses scaled from
another optimizer's value: sweep before trusting them), ``DEFAULT_MOMENTUM`` (the primary
momentum beta), ``MU_MAPS_TO`` (which constructor argument ``mu=`` overrides, beta = 1 - mu,
so a gap-vs-momentum sweep, paper Figure 4, varies one number for every optimizer) and
``DECOUPLED_DECAY`` (the constructor arguments that make ``weight_decay`` decoupled, x_{t+1}
= x_t + d_t - eta_t lambda x_t, for an optimizer whose constructor defaults to another
convention: ``lmo.build`` passes these, and ``gpu_runs.TrainConfig`` records them in the
run's ``opt_kwargs``, so they are part of the run's identity).

>>> DEFAULT_LR["muon"] == PRESETS["muon"].lr == 0.02
True
>>> dict(DECOUPLED_DECAY)
{'nadam': {'decoupled_weight_decay': True}}
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Callable

from lmo import adam_family, layer_geometry, muon_family, steepest_descent
from lmo.geometry import L2, Sign, Spectral


@dataclass(frozen=True)
class Protocol:
    """A training protocol: decoupled weight decay, global-norm clip, warmup + cosine schedule.

    lr(t) rises linearly to ``peak`` over ``warmup_frac * total_steps`` steps, then follows
    a cosine from ``peak`` down to ``final_frac * peak`` at ``total_steps``
    (``lmo.schedules.warmup_cosine(peak, total_steps, warmup_frac, final_frac)``).

    >>> PAPER_PROTOCOL.weight_decay, PAPER_PROTOCOL["grad_clip"], Protocol(warmup_frac=0.05).warmup_frac
    (0.1, 1.0, 0.05)
    """

    weight_decay: float = 0.1
    grad_clip: float = 1.0
    warmup_frac: float = 0.1
    final_frac: float = 0.1
    schedule: str = "warmup_cosine"

    def __getitem__(self, key: str):
        return getattr(self, key)

    def as_dict(self) -> dict:
        return asdict(self)


PAPER_PROTOCOL = Protocol()


#: what the theory's diagnostics measure an optimizer in (gpu_runs.diagnostics), per group
#: of lmo.combine.muon_labels ("matrix": hidden matrices, "other": the rest): a geometry class
SIGN = {"matrix": Sign, "other": Sign}
EUCLIDEAN = {"matrix": L2, "other": L2}
SPECTRAL_MATRICES = {"matrix": partial(Spectral, method="svd"), "other": Sign}


def sign_everywhere() -> dict:
    """A record's default ``geometry``: the sign geometry (l_inf, dual l_1) for every group.

    >>> sign_everywhere() == SIGN
    True
    """
    return dict(SIGN)


@dataclass(frozen=True)
class Preset:
    """Everything the package records about one named optimizer, in one place:

    - ``build``: its constructor (``lr`` first; lmo.registry.OPTIMIZERS lists them);
    - ``lr``: a starting peak lr eta_peak for small Llama-style models under the protocol,
      ``lr_source`` where that number comes from (several are guesses: sweep before trusting);
    - ``momentum``: its primary momentum beta (beta1 / momentum), ``mu_maps_to`` the argument
      ``mu=`` overrides (beta = 1 - mu), so a gap-vs-momentum sweep varies one number;
    - ``geometry``: the norm its diagnostics measure in, per muon_labels group
      (``SIGN``, ``EUCLIDEAN``, ``SPECTRAL_MATRICES``; lmo.registry.geometries);
    - ``matrix_only``: it takes matrices only, lmo.registry.build routes the rest to AdamW;
    - ``decoupled_decay``: the constructor arguments that make ``weight_decay`` decoupled,
      x_{t+1} = x_t + d_t - eta_t lambda x_t, where its default is another convention.

    >>> PRESETS["muon"].lr, PRESETS["muon"].matrix_only, PRESETS["muon"].build.__name__
    (0.02, True, 'muon')
    """

    build: Callable
    lr: float
    momentum: float
    mu_maps_to: str
    lr_source: str
    geometry: Mapping = field(default_factory=sign_everywhere)
    matrix_only: bool = False
    decoupled_decay: Mapping = field(default_factory=dict)


#: name -> Preset: every optimizer of the package, one record each (lmo.registry reads it)
PRESETS: dict[str, Preset] = {
    "adamw": Preset(
        adam_family.adamw, lr=0.001, momentum=0.9, mu_maps_to='betas[0]',
        lr_source=(
            "common peak for 124M-360M GPT/Llama pretraining with wd 0.1 (nanoGPT-style runs use "
            "6e-4..1e-3; SmolLM-scale runs up to 3e-3); not re-swept here")),
    "nadam": Preset(
        adam_family.nadam, lr=0.001, momentum=0.9, mu_maps_to='betas[0] (psi_t schedule built on it)',
        # torch.optim.NAdam's default is coupled L2 (g <- g + lambda x before the moments): with
        # the protocol's lambda = 0.1 it holds the tiny model at ~3.0 nats/byte (AdamW: 1.45)
        decoupled_decay={"decoupled_weight_decay": True},
        lr_source=(
            "guess: same as AdamW (same per-coordinate update scale)")),
    "adan": Preset(
        adam_family.adan, lr=0.003, momentum=0.98,
        mu_maps_to='betas[0] (the gradient EMA; betas[1], betas[2] unchanged)',
        lr_source=(
            "guess: 3x AdamW (the Adan authors report tolerating larger lrs than Adam); not swept")),
    "mars": Preset(
        adam_family.mars, lr=0.003, momentum=0.95, mu_maps_to='betas[0] (also sets gamma*b1/(1-b1))',
        lr_source=(
            "official MARS code default lr=3e-3 (its GPT-2 small/medium configs)")),
    "soap": Preset(
        adam_family.soap, lr=0.003, momentum=0.95, mu_maps_to='betas[0]',
        lr_source=(
            "official SOAP code default and README example lr=3e-3")),
    "muon": Preset(
        muon_family.muon, lr=0.02, momentum=0.95, mu_maps_to='momentum',
        geometry=SPECTRAL_MATRICES, matrix_only=True,
        lr_source=(
            "Keller Jordan's Muon default lr=0.02 (modded-nanogpt 124M), with Muon's max(1, m/n)^0.5 "
            "scale; non-matrix params go to AdamW at DEFAULT_LR['adamw']")),
    "normuon": Preset(
        muon_family.normuon, lr=0.003, momentum=0.95, mu_maps_to='momentum',
        geometry=SPECTRAL_MATRICES, matrix_only=True,
        lr_source=(
            "guess: with the paper's RMS-0.2 scale the update RMS is 0.2 lr, like AdamW's, so an "
            "AdamW-range lr; the official code's default 0.02 belongs to its Muon-style scale")),
    "adamuon": Preset(
        muon_family.adamuon, lr=0.003, momentum=0.95, mu_maps_to='momentum',
        geometry=SPECTRAL_MATRICES, matrix_only=True,
        lr_source=(
            "guess, as normuon (RMS-0.2 aligned update); the official code's 0.02 is its default")),
    "lion": Preset(
        steepest_descent.lion, lr=0.0002, momentum=0.9, mu_maps_to='betas[0]',
        lr_source=(
            "guess: AdamW / 5 (the Lion paper recommends 3-10x smaller lr than AdamW)")),
    "signum": Preset(
        steepest_descent.signum, lr=0.0002, momentum=0.9, mu_maps_to='momentum',
        lr_source=(
            "guess: same as Lion (both take sign steps)")),
    "normalized_sgd": Preset(
        steepest_descent.normalized_sgd, lr=0.05, momentum=0.9, mu_maps_to='momentum',
        geometry=EUCLIDEAN,
        lr_source=(
            "guess: step of Frobenius norm lr per tensor, 0.05 ~ AdamW's update norm on a 256x256 "
            "matrix (RMS ~2e-4 x 256); depends on the geometry's normalisation")),
    "scion": Preset(
        layer_geometry.scion, lr=0.02, momentum=0.95, mu_maps_to='momentum (one for every group)',
        # diagnostics measure scion in the sign geometry everywhere, as every run so far was measured
        lr_source=(
            "Muon's preset 0.02 for the hidden group (which is lmo.muon itself, so muon and scion "
            "differ only in the non-matrix groups); the other groups step lr x radius, radii from the "
            "official Scion README's nanoGPT configuration (head 60 x, Sign / d_in; embedding and "
            "vectors 1 x). Scion's own nanoGPT hidden step is lr 2^-12 x radius 50 = 0.0122, within "
            "the lr sweep's grid")),
}


class PresetView(Mapping):
    """name -> one field of every record of :data:`PRESETS`, read when asked (a record
    added later shows), e.g. ``DEFAULT_LR["adamw"]`` is ``PRESETS["adamw"].lr``.

    >>> PresetView("momentum")["lion"], "lion" in PresetView("lr")
    (0.9, True)
    """

    def __init__(self, field_name: str, keep: Callable = lambda value: True):
        self.field_name, self.keep = field_name, keep

    def _items(self) -> dict:
        values = {n: getattr(p, self.field_name) for n, p in PRESETS.items()}
        return {n: v for n, v in values.items() if self.keep(v)}

    def __getitem__(self, name):
        return self._items()[name]

    def __iter__(self):
        return iter(self._items())

    def __len__(self):
        return len(self._items())

    def __repr__(self):
        return f"PresetView({self.field_name!r}: {self._items()!r})"


DEFAULT_LR = PresetView("lr")
LR_SOURCE = PresetView("lr_source")
DEFAULT_MOMENTUM = PresetView("momentum")
MU_MAPS_TO = PresetView("mu_maps_to")
#: only the optimizers whose constructor needs arguments for a decoupled decay
DECOUPLED_DECAY = PresetView("decoupled_decay", keep=bool)


def peak_lr(name: str, lr: float | None = None) -> float:
    """The one resolution of a peak lr: ``lr`` when given, else ``DEFAULT_LR[name]``::

        eta_peak = lr  if lr is not None  else  DEFAULT_LR[name]

    (``lmo.registry.build`` / ``make`` and ``gpu_runs.recipe.peak_lr`` all ask it).

    >>> peak_lr("adamw"), peak_lr("adamw", 3e-4)
    (0.001, 0.0003)
    """
    return float(DEFAULT_LR[name] if lr is None else lr)
