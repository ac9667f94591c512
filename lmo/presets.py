"""The paper's training protocol and per-optimizer default peak learning rates and momenta.

``PAPER_PROTOCOL``: from the paper's stated setup (its summary; paper_figs/statistics/paper_numbers.py lists each number with its source): weight
decay 0.1, gradient clipping at global norm 1.0, warmup for 10% of the budget, cosine
decay to 0.1 x peak. (The 10B MoE run states a peak lr of 0.00225; the summary gives no
per-optimizer peak lrs for the 135M / 360M runs.)

``DEFAULT_LR[name]``: a starting peak lr for small Llama-style models (~100M-400M params)
under that protocol; ``LR_SOURCE[name]`` says where each number comes from. Several are
guesses scaled from another optimizer's value: sweep before trusting them.

``DECOUPLED_DECAY[name]``: the constructor arguments that make ``weight_decay`` decoupled
(x_{t+1} = x_t + d_t - eta_t lambda x_t, AdamW-style) for an optimizer whose constructor
defaults to another convention. The protocol's decay is decoupled for every optimizer;
``lmo.build`` passes these, and ``gpu_runs.TrainConfig`` records them in the run's
``opt_kwargs`` (so they are part of the run's identity).

``DEFAULT_MOMENTUM[name]``: the optimizer's primary momentum beta (beta1 / momentum);
``MU_MAPS_TO[name]``: which constructor argument ``mu=`` overrides (beta = 1 - mu), so a
gap-vs-momentum sweep (paper Figure 4) varies one number for every optimizer.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Protocol:
    """A training protocol: decoupled weight decay, global-norm clip, warmup + cosine schedule.

    lr(t) rises linearly to ``peak`` over ``warmup_frac * total_steps`` steps, then follows
    a cosine from ``peak`` down to ``final_frac * peak`` at ``total_steps``
    (``lmo.schedules.warmup_cosine(peak, total_steps, warmup_frac, final_frac)``).
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

DEFAULT_LR = {
    "adamw": 1e-3,
    "nadam": 1e-3,
    "adan": 3e-3,
    "mars": 3e-3,
    "soap": 3e-3,
    "muon": 0.02,
    "normuon": 3e-3,
    "adamuon": 3e-3,
    "lion": 2e-4,
    "signum": 2e-4,
    "normalized_sgd": 0.05,
    "scion": 0.02,
}

def peak_lr(name: str, lr: float | None = None) -> float:
    """The one resolution of a peak lr: ``lr`` when given, else ``DEFAULT_LR[name]``::

        eta_peak = lr  if lr is not None  else  DEFAULT_LR[name]

    (``lmo.registry.build`` / ``make`` and ``gpu_runs.recipe.peak_lr`` all ask it)."""
    return float(DEFAULT_LR[name] if lr is None else lr)


LR_SOURCE = {
    "adamw": "common peak for 124M-360M GPT/Llama pretraining with wd 0.1 (nanoGPT-style runs use "
             "6e-4..1e-3; SmolLM-scale runs up to 3e-3); not re-swept here",
    "nadam": "guess: same as AdamW (same per-coordinate update scale)",
    "adan": "guess: 3x AdamW (the Adan authors report tolerating larger lrs than Adam); not swept",
    "mars": "official MARS code default lr=3e-3 (its GPT-2 small/medium configs)",
    "soap": "official SOAP code default and README example lr=3e-3",
    "muon": "Keller Jordan's Muon default lr=0.02 (modded-nanogpt 124M), with Muon's "
            "max(1, m/n)^0.5 scale; non-matrix params go to AdamW at DEFAULT_LR['adamw']",
    "normuon": "guess: with the paper's RMS-0.2 scale the update RMS is 0.2 lr, like AdamW's, so "
               "an AdamW-range lr; the official code's default 0.02 belongs to its Muon-style scale",
    "adamuon": "guess, as normuon (RMS-0.2 aligned update); the official code's 0.02 is its default",
    "lion": "guess: AdamW / 5 (the Lion paper recommends 3-10x smaller lr than AdamW)",
    "signum": "guess: same as Lion (both take sign steps)",
    "normalized_sgd": "guess: step of Frobenius norm lr per tensor, 0.05 ~ AdamW's update norm on a "
                      "256x256 matrix (RMS ~2e-4 x 256); depends on the geometry's normalisation",
    "scion": "Muon's preset 0.02 for the hidden group (which is lmo.muon itself, so muon and scion differ "
             "only in the non-matrix groups); the other groups step lr x radius, radii from the official "
             "Scion README's nanoGPT configuration (head 60 x, Sign / d_in; embedding and vectors 1 x). "
             "Scion's own nanoGPT hidden step is lr 2^-12 x radius 50 = 0.0122, within the lr sweep's grid",
}

DECOUPLED_DECAY: dict[str, dict] = {
    # torch.optim.NAdam's default is coupled L2 (g <- g + lambda x before the moments): with
    # the protocol's lambda = 0.1 it holds the tiny model at ~3.0 nats/byte (AdamW: 1.45)
    "nadam": {"decoupled_weight_decay": True},
}

DEFAULT_MOMENTUM = {
    "adamw": 0.9, "nadam": 0.9, "adan": 0.98, "mars": 0.95, "soap": 0.95, "muon": 0.95,
    "normuon": 0.95, "adamuon": 0.95, "lion": 0.9, "signum": 0.9, "normalized_sgd": 0.9,
    "scion": 0.95,
}

MU_MAPS_TO = {
    "adamw": "betas[0]", "nadam": "betas[0] (psi_t schedule built on it)", "adan": "betas[0] (the "
    "gradient EMA; betas[1], betas[2] unchanged)", "mars": "betas[0] (also sets gamma*b1/(1-b1))",
    "soap": "betas[0]", "muon": "momentum", "normuon": "momentum", "adamuon": "momentum",
    "lion": "betas[0]", "signum": "momentum", "normalized_sgd": "momentum",
    "scion": "momentum (one for every group)",
}
