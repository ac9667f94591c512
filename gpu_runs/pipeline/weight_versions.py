"""A stage's weight versions, held functionally: a version is a dict name -> leaf tensor
and a forward is ``torch.func.functional_call(module, version, inputs)``, so a microbatch's
backward runs through the graph of the version its forward used (weight stashing) however
many newer versions exist.

``update_params``: which weights step t's forward and update use, ``"stash"`` (the version
step t's microbatches ran on: 2bw, sync) or ``"current"`` (pipedream: the forward of
microbatch k runs on u_{max(0, k - tau_s)}, tau_s = P - 1 - s, the update on the newest,
and the last tau_s versions are kept: a checkpoint's stash).

A look-ahead corrector's step t runs its forward and backward at the gradient point z_t
(``lmo.lookahead.gradient_point``, given to :meth:`WeightVersions.for_forward` as ``point``):
z_t is a version of its own (id ``-(t + 1)``), stashed with the step's microbatches, while
the update still sees x_t, the version z_t was computed from. A tied embedding / head's owner
(the first stage) sends z_t's tied weight to the last stage when it creates it
(``gpu_runs.pipeline.comm``), so the head forwards at z_t too, as the trainer's.
"""
from __future__ import annotations

from typing import Mapping

from lmo.base import apply_updates


class WeightVersions:
    """Versions ``id -> {name: leaf}`` of one stage's own parameters (``names``)."""

    def __init__(self, params: Mapping, stage: int, num_stages: int, update_params: str = "stash"):
        if update_params not in ("stash", "current"):
            raise ValueError(f"update_params must be 'stash' or 'current', got {update_params!r}")
        self.stage, self.update_params = stage, update_params
        # pipedream: stage s forwards microbatch k on u_{max(0, k - tau_s)}
        self.tau = num_stages - 1 - stage if update_params == "current" else 0
        self.names = list(params)
        self.version_id = 0
        self.versions = {0: self.leaves(params)}  # id -> dict of leaf tensors
        self.step_version: dict = {}  # step -> version id its microbatches used
        self.step_base: dict = {}  # step -> the version x_t its gradient point z_t was computed from

    @staticmethod
    def leaves(params: Mapping) -> dict:
        return {k: v.detach().requires_grad_(True) for k, v in params.items()}

    @property
    def current(self) -> dict:
        return self.versions[self.version_id]

    @property
    def params(self) -> dict:
        """The current version, detached."""
        return {k: v.detach() for k, v in self.current.items()}

    def set_params(self, params: Mapping) -> None:
        self.versions = {self.version_id: self.leaves({k: params[k].clone() for k in self.names})}

    def opened(self, step: int) -> bool:
        """Whether a microbatch of ``step`` has run (its version, z_t included, exists)."""
        return step in self.step_version

    def for_forward(self, step: int, mb: int, point=None) -> int:
        """The version id microbatch ``mb`` of step ``step`` runs on (all of a step's on one).
        ``point`` (stash only): x_t -> z_t, the gradient point; the step's first microbatch
        creates the version z_t of the current x_t, the step's others run on it."""
        cur = self.version_id if self.update_params == "stash" else max(0, mb - self.tau)
        if point is not None and self.update_params == "stash":
            if step not in self.step_version:
                self.step_base[step] = cur
                self.versions[-(step + 1)] = self.leaves(point({k: v.detach() for k, v in self.current.items()}))
            cur = -(step + 1)
        vid = self.step_version.setdefault(step, cur)
        if vid != cur:
            raise RuntimeError(f"stage {self.stage}: step {step} started on version {vid} "
                               f"but microbatch {mb} would run on {cur}")
        return cur

    def for_update(self, step: int) -> dict:
        """The (detached) weights step ``step``'s update sees; the step is closed."""
        vid = self.step_version.pop(step)
        vid = self.step_base.pop(step, vid)   # a gradient point's step: the update sees x_t
        base = self.versions[vid if self.update_params == "stash" else self.version_id]
        return {k: v.detach() for k, v in base.items()}

    def push(self, updates: Mapping) -> dict:
        """New current version = current + ``updates`` (``lmo.base.apply_updates``, the
        trainer's apply: x + d in the weights' dtype)."""
        cur = self.current
        self.version_id += 1
        self.versions[self.version_id] = self.leaves(apply_updates({k: cur[k].detach() for k in self.names}, updates))
        return self.versions[self.version_id]

    def gc(self, in_use) -> None:
        """Drop versions no stashed microbatch (``in_use``: their ids), open step or the
        present still needs."""
        live = {self.version_id} | set(in_use) | set(self.step_version.values()) | set(self.step_base.values())
        live |= set(range(self.version_id - self.tau, self.version_id))  # pipedream's u_{k - tau_s}
        for vid in [v for v in self.versions if v not in live]:
            del self.versions[vid]

    def checkpoint_versions(self) -> dict:
        """pipedream: {k: u_k} for the versions a resumed stage still forwards on."""
        lo = self.version_id - self.tau
        return {i: {k: v.detach().cpu() for k, v in p.items()} for i, p in self.versions.items() if i >= lo}

    def restore(self, step: int, params: Mapping, versions: Mapping | None, device) -> None:
        """The weights after ``step`` steps: ``versions`` {k: u_k} (pipedream) or ``params``."""
        if versions:
            self.version_id = step
            self.versions = {int(i): self.leaves({k: v.to(device).clone() for k, v in p.items()
                                                  if k in self.names}) for i, p in versions.items()}
        else:
            self.set_params({k: v.to(device) for k, v in params.items()})
