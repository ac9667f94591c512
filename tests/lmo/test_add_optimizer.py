"""docs/interfaces.md, "How to add an optimizer", walked on a throwaway optimizer: its constructor
(step 1, here in the test), its record in lmo.presets.PRESETS (step 2) and nothing else make it
listed, buildable, measurable by the diagnostics and offered by ``python -m gpu_runs.train
--optimizer``; removing the record removes it everywhere. And no module of lmo or gpu_runs keeps a
hand-written list of the optimizer names the records already hold."""
import ast
import pathlib
from typing import NamedTuple

import pytest
import torch

import lmo
from lmo.hyperparameters import check_lr, check_mu
from lmo.combine import chain
from lmo.presets import DEFAULT_LR, DEFAULT_MOMENTUM, PRESETS, Preset
from lmo.registry import MATRIX_OPTIMIZERS, OPTIMIZERS, UnknownOptimizer, build, geometries
from lmo.transforms import add_decoupled_decay, scale_by_learning_rate, scale_by_momentum

ROOT = pathlib.Path(__file__).resolve().parents[2]
#: the records themselves, and the package's ``__all__`` (a top-level name is optional: the recipe's note)
EXEMPT = ("lmo/presets.py", "lmo/__init__.py")


class DummyState(NamedTuple):
    step: torch.Tensor
    momentum: dict


def dummy_sgd(lr=0.05, momentum=0.9, weight_decay=0.0, *, mu=None):
    """Step 1: SGD with momentum, m_t = ema(m_{t-1}, g_t, mu), d_t = -eta_t m_t - eta_t lambda x_t."""
    check_lr(lr)
    mu = 1.0 - momentum if mu is None else mu
    check_mu(mu)
    return chain(scale_by_momentum(mu), scale_by_learning_rate(), add_decoupled_decay(weight_decay),
                 name="dummy_sgd", lr=lr, state=DummyState, hyper=dict(lr=lr, mu=mu, weight_decay=weight_decay))


def help_text(capsys) -> str:
    from gpu_runs.train import parse_args
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    return capsys.readouterr().out


def test_the_recipe_adds_and_removes_an_optimizer(monkeypatch, capsys):
    assert "dummy_sgd" not in OPTIMIZERS and "dummy_sgd" not in help_text(capsys)
    monkeypatch.setitem(PRESETS, "dummy_sgd", Preset(      # step 2: the record, the only registration
        dummy_sgd, lr=0.05, momentum=0.9, mu_maps_to="momentum", lr_source="the recipe test's throwaway"))

    assert OPTIMIZERS["dummy_sgd"] is dummy_sgd and "dummy_sgd" in sorted(OPTIMIZERS)
    assert DEFAULT_LR["dummy_sgd"] == 0.05 and DEFAULT_MOMENTUM["dummy_sgd"] == 0.9
    assert "dummy_sgd" not in MATRIX_OPTIMIZERS
    params = {"h.w": torch.ones(2, 3), "h.b": torch.zeros(3)}
    grads = {"h.w": torch.full((2, 3), 2.0), "h.b": torch.ones(3)}
    opt = build("dummy_sgd", params, weight_decay=0.0)          # the preset lr, 0.05
    updates, state = opt.update(grads, opt.init(params), params)
    assert torch.equal(updates["h.w"], -0.05 * (0.1 * grads["h.w"]))   # m_1 = mu g_1 with mu = 0.1
    assert lmo.state_dict(state).keys() == {"step", "momentum/h.w", "momentum/h.b"}
    assert {k: g.name for k, g in geometries("dummy_sgd", params).items()} == {"h.w": "sign", "h.b": "sign"}

    assert "dummy_sgd" in help_text(capsys)                     # python -m gpu_runs.train --help
    from gpu_runs.train import parse_args
    assert parse_args(["--optimizer", "dummy_sgd", "--steps", "2"]).optimizer == "dummy_sgd"

    monkeypatch.undo()                                          # removing the record removes it
    assert "dummy_sgd" not in OPTIMIZERS and "dummy_sgd" not in help_text(capsys)
    with pytest.raises(UnknownOptimizer, match="unknown optimizer 'dummy_sgd'"):
        build("dummy_sgd", params)
    with pytest.raises(UnknownOptimizer):
        geometries("dummy_sgd", params)


def name_lists(path: pathlib.Path, names: set) -> list:
    """(line, names) of every literal tuple / list / set / dict in the file that spells four or
    more registered optimizer names."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
        if not isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)) or items is None:
            continue
        spelled = {e.value for e in items if isinstance(e, ast.Constant) and e.value in names}
        if len(spelled) >= 4:
            out.append((node.lineno, sorted(spelled)))
    return out


def test_no_hand_written_list_of_optimizer_names_outside_the_records():
    names = set(PRESETS)
    found = {}
    for pkg in ("lmo", "gpu_runs"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel not in EXEMPT and (lists := name_lists(path, names)):
                found[rel] = lists
    assert not found, f"hand-written optimizer name lists (read them from lmo.presets.PRESETS): {found}"


def test_the_name_list_check_can_fail(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text('SOME = ("adamw", "muon", "lion", "soap")\nFEW = ("adamw", "muon")\n')
    assert name_lists(planted, set(PRESETS)) == [(1, ["adamw", "lion", "muon", "soap"])]
    assert len(name_lists(ROOT / "lmo" / "presets.py", set(PRESETS))) == 1   # the records themselves
