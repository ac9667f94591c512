"""lmo: LMO-based optimizers (Muon, sign methods, ...) as pure functions, their delayed and
error-feedback wrappers, and the geometries they live in (docs/design.md §3-§7).

A short tour::

    import lmo
    opt = lmo.muon(lr=0.02)                       # or lmo.adamw, lmo.lion, lmo.soap, ...
    state = opt.init(params)                      # params: mapping name -> tensor
    updates, state = opt.update(grads, state, params)
    params = lmo.apply_updates(params, updates)   # x_{t+1} = x_t + d_t

- Optimizers: ``muon``, ``normuon``, ``adamuon``, ``adamw``, ``nadam``, ``adan``, ``mars``,
  ``soap``, ``lion``, ``signum``, ``normalized_sgd`` and the general ``lmo_momentum(lr,
  geometry)``; ``build(name, params)`` makes a whole-model optimizer by name (matrix
  optimizers get the hidden matrices, AdamW the rest); each optimizer's record (preset lr,
  momentum, geometry) is ``lmo.presets.PRESETS[name]``.
- Delay (docs/design.md §4): ``delayed(opt, tau)`` applies d_{t-tau}; ``error_feedback(opt)``
  adds the EF correction; what either applies next is a function of its state alone:
  ``next_applied(state)`` (d_{t-tau}, EF: 2 d_{t-1} - d_{t-2}), ``virtual_offset(state)``
  (y_t - x_t). PipeDream's stale-point model: ``pipedream_delays``, ``contiguous_stages``
  and the pure history ``history_init`` / ``history_push`` / ``mixed_point``
  (``ParamHistory``: the same as a mutable object). The variants' names, used by every
  package: ``VARIANTS`` = sync, 2bw, ef, pipedream (``lmo.variants``: ``MODES``, ``ONE_STEP``). A run's delay as one value: ``Delay`` (kind,
  tau, mitigations; its rules checked once, at construction; ``Delay.of_config`` reads a run
  configuration's flat fields, ``.wrap(opt)`` builds the optimizer).
- Delay correctors (docs/correctors.md), each ``(opt, delay)`` with an int or per-block delay,
  the inner optimizer bit for bit at tau = 0: ``weight_prediction`` and ``nesterov_lookahead``
  (the gradient taken at ``gradient_point(state, x)``, an extrapolated point), ``dc_asgd_adaptive``
  (DC-ASGD-a) and ``dc_asgd_ema``, ``lr_damping``; by name in ``CORRECTORS`` /
  ``with_corrector``. Per-group delays: ``delay_by_label`` (e.g. delay only the Muon group).
- ``scion``: Scion's per-layer LMOs (Muon's hidden group; ColNorm embedding, Sign head, RMS
  vectors) instead of the AdamW fallback; ``scion_labels`` names its groups.
- Geometries: ``Spectral`` (Muon's), ``Frobenius``, ``Sign``, ``L2``, ``RMSToRMS``,
  ``ColNorm``, ``RowNorm``; each has ``norm``, ``dual_norm``, ``lmo`` and ``rho``.
- Newton-Schulz: ``newton_schulz(G)`` (``method="gram"`` for Gram NS; its module, with the
  coefficient sets and helpers, is ``lmo.polar_factor``), ``polar``,
  ``ns_inexactness``, ``choose_ns_dtype`` (what ns_dtype="auto" means: bf16 on CUDA, fp32 elsewhere).
- Composition: ``chain``, the one composer (every step is one type, ``Optimizer``: a named
  optimizer is a ``chain`` of the transforms of ``lmo.transforms``), ``partition`` (module ``lmo.combine``), ``clip_by_global_norm``
  (``lmo.clipping``), ``warmup_cosine``. No name here is also a module's: ``lmo.combine``,
  ``lmo.clipping``, ``lmo.ef_correction`` (``error_feedback``) and ``lmo.polar_factor`` are the modules.
- torch.optim: ``TorchOptimizer(lmo.muon(0.02), model.named_parameters())``.
- State I/O: ``state_dict`` / ``load_state_dict`` (flat, torch.save-able).
"""
from lmo.adam_family import adamw, adan, mars, nadam, soap
from lmo.base import Optimizer, apply_updates, load_state_dict, state_dict
from lmo.clipping import clip_by_global_norm
from lmo.combine import chain, muon_labels, partition
from lmo.corrector_registry import CORRECTORS, with_corrector
from lmo.delay import DelayState, delayed, flush_applied, next_applied, virtual_offset
from lmo.delay_compensation import DCAdaptiveState, dc_asgd_adaptive, dc_asgd_ema
from lmo.delay_profiles import delay_by_label
from lmo.ef_correction import ErrorFeedbackState, error_feedback
from lmo.geometry import (ColNorm, Frobenius, Geometry, L2, RMSToRMS, RowNorm, Sign, Spectral,
                          get_geometry)
from lmo.layer_geometry import scion, scion_labels
from lmo.muon_family import adamuon, muon, normuon
from lmo.lookahead import LookaheadState, gradient_point, nesterov_lookahead, stage_momentum, weight_prediction
from lmo.polar_factor import choose_ns_dtype, newton_schulz, ns_inexactness, polar
from lmo.pipedream import (ParamHistory, StaleHistory, contiguous_stages, history_init, history_load,
                           history_push, history_state_dict, mixed_point, pipedream_delays)
from lmo.registry import OPTIMIZERS, build
from lmo.schedules import constant, warmup_cosine
from lmo.steepest_descent import lion, lmo_momentum, normalized_sgd, signum
from lmo.step_damping import lr_damping
from lmo.torch_adapter import TorchOptimizer
from lmo.variants import VARIANTS, Delay

__all__ = [
    # optimizers
    "muon", "normuon", "adamuon", "adamw", "nadam", "adan", "mars", "soap", "lion", "signum",
    "normalized_sgd", "lmo_momentum", "scion", "scion_labels", "build", "OPTIMIZERS",
    # delay wrappers and PipeDream helpers
    "delayed", "error_feedback", "DelayState", "ErrorFeedbackState", "next_applied", "virtual_offset",
    "flush_applied", "ParamHistory", "StaleHistory", "history_init", "history_push", "mixed_point",
    "history_state_dict", "history_load", "pipedream_delays", "contiguous_stages",
    # delay correctors and per-group delays
    "weight_prediction", "nesterov_lookahead", "gradient_point", "LookaheadState", "stage_momentum",
    "dc_asgd_adaptive", "dc_asgd_ema", "DCAdaptiveState", "lr_damping", "CORRECTORS", "with_corrector",
    "delay_by_label",
    # the variant names every package uses (lmo.variants)
    "VARIANTS", "Delay",
    # geometries
    "Geometry", "Spectral", "Frobenius", "Sign", "L2", "RMSToRMS", "ColNorm", "RowNorm",
    "get_geometry",
    # Newton-Schulz
    "newton_schulz", "polar", "ns_inexactness", "choose_ns_dtype",
    # composition, schedules, protocol
    "chain", "clip_by_global_norm", "partition", "muon_labels", "warmup_cosine", "constant",
    "Optimizer", "apply_updates", "state_dict", "load_state_dict", "TorchOptimizer",
]
