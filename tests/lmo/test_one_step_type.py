"""lmo has one step type and one composer (issue 49 item 5): every named optimizer, wrapper and
transform is an ``lmo.base.Optimizer``, ``lmo.combine.chain`` composes them in both state layouts,
and the state_dict keys that checkpoints pair entries by stay the ones the kept runs were saved
with (recorded below from the code before the two types were merged)."""
import ast
import pathlib
import re

import pytest
import torch

import lmo
from lmo import adam_moments, transforms
from lmo.base import Optimizer, StepInfo
from lmo.clipping import clip_by_global_norm
from lmo.combine import ChainState, chain
from lmo.registry import OPTIMIZERS, build

ROOT = pathlib.Path(__file__).resolve().parents[2]
PARAMS = {"wte.weight": torch.randn(11, 6), "h.0.attn.w": torch.randn(6, 6), "h.0.norm.weight": torch.ones(6),
          "h.0.b": torch.randn(6), "lm_head.weight": torch.randn(11, 6), "moe.w": torch.randn(3, 4, 6)}

#: build(name, PARAMS)'s state_dict keys, a parameter's name written <p> (from the code at 6f9dfe4)
KEYS = {
    "adamw": ["exp_avg/<p>", "exp_avg_sq/<p>", "step"],
    "adan": ["exp_avg/<p>", "exp_avg_diff/<p>", "exp_avg_sq/<p>", "prev_grad/<p>", "step"],
    "lion": ["momentum/<p>", "step"],
    "mars": ["exp_avg/<p>", "exp_avg_sq/<p>", "last_grad/<p>", "step"],
    "nadam": ["exp_avg/<p>", "exp_avg_sq/<p>", "mu_product", "step"],
    "normalized_sgd": ["momentum/<p>", "step"],
    "signum": ["momentum/<p>", "step"],
    "soap": ["GG_L/<p>", "GG_R/<p>", "Q_L/<p>", "Q_R/<p>", "count", "exp_avg/<p>", "exp_avg_sq/<p>"],
    "muon": ["inner/matrix/momentum/<p>", "inner/matrix/step", "inner/other/exp_avg/<p>",
             "inner/other/exp_avg_sq/<p>", "inner/other/step"],
    "normuon": ["inner/matrix/momentum/<p>", "inner/matrix/second_moment/<p>", "inner/matrix/step",
                "inner/other/exp_avg/<p>", "inner/other/exp_avg_sq/<p>", "inner/other/step"],
    "adamuon": ["inner/matrix/momentum/<p>", "inner/matrix/second_moment/<p>", "inner/matrix/step",
                "inner/other/exp_avg/<p>", "inner/other/exp_avg_sq/<p>", "inner/other/step"],
    "scion": ["inner/embed/momentum/<p>", "inner/embed/step", "inner/head/momentum/<p>", "inner/head/step",
              "inner/hidden/momentum/<p>", "inner/hidden/step", "inner/vector/momentum/<p>", "inner/vector/step"],
}


def key_patterns(flat) -> list:
    names = sorted(PARAMS, key=len, reverse=True)
    return sorted({next((k[:-len(n)] + "<p>" for n in names if k.endswith("/" + n)), k) for k in flat})


@pytest.mark.parametrize("name", sorted(KEYS))
def test_state_dict_keys_are_the_checkpoints(name):
    assert key_patterns(lmo.state_dict(build(name, PARAMS, lr=1e-2).init(PARAMS))) == KEYS[name]


def test_the_clip_chain_keeps_its_nested_keys():
    opt = chain(clip_by_global_norm(1.0), build("adamw", PARAMS))
    assert key_patterns(lmo.state_dict(opt.init(PARAMS))) == ["inner/1/exp_avg/<p>", "inner/1/exp_avg_sq/<p>",
                                                               "inner/1/step"]
    assert isinstance(opt.init(PARAMS), ChainState) and opt.name == "chain(clip_by_global_norm, adamw)"


def test_every_step_is_an_optimizer():
    for name in OPTIMIZERS:
        assert type(build(name, PARAMS)) is Optimizer, name
    pieces = [transforms.scale_by_momentum(0.1), transforms.add_decoupled_decay(0.1),
              transforms.scale_by_learning_rate(), adam_moments.scale_by_adam(0.9, 0.999, 1e-8)]
    assert all(type(p) is Optimizer and p.fields is not None for p in pieces)
    assert not hasattr(transforms, "Transform") and not hasattr(transforms, "compose")


def test_a_named_chain_takes_transforms_only():
    with pytest.raises(TypeError, match="every part must be a transform"):
        chain(transforms.scale_by_learning_rate(), clip_by_global_norm(1.0), name="x", lr=0.1, state=ChainState)


def test_a_named_chain_passes_the_step_to_each_transform():
    seen = []
    probe = transforms.stateless(lambda u, params, step: seen.append((step.t, step.eta)) or u, "probe")
    opt = chain(probe, transforms.scale_by_learning_rate(), name="sgd", lr=lambda t: 0.5 / (int(t) + 1),
                state=ChainState)
    state = opt.init({"w": torch.zeros(1)})
    for _ in range(2):
        updates, state = opt.update({"w": torch.ones(1)}, state)
    assert seen == [(1, 0.5), (2, 0.25)] and torch.equal(updates["w"], torch.tensor([-0.25]))
    assert isinstance(StepInfo(torch.tensor(0), 0.1, {}).t, int)


def dataclass_step_types() -> list:
    """Classes in lmo whose dataclass fields include both ``init`` and ``update``."""
    found = []
    for path in sorted((ROOT / "lmo").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                fields = {t.target.id for t in node.body if isinstance(t, ast.AnnAssign) and isinstance(t.target, ast.Name)}
                if {"init", "update"} <= fields:
                    found.append(f"{path.relative_to(ROOT).as_posix()}:{node.name}")
    return found


def test_one_step_type_and_one_composer():
    assert dataclass_step_types() == ["lmo/base.py:Optimizer"]
    composers = [m.group(0) for p in (ROOT / "lmo").rglob("*.py")
                 for m in re.finditer(r"^def (chain|compose)\(", p.read_text(), flags=re.M)]
    assert composers == ["def chain("]
