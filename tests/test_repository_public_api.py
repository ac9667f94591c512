"""The public surface: what a user types first, and the README's examples, run as written.

`import lmo; lmo.muon(...)` and the like must work for every name each package's
`__all__` promises, and the README's ```python blocks are executed in order (one
namespace per block), so the README cannot drift from the API.
"""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: names a user may rely on at each package's top level (issue: a public API)
REQUIRED = {
    "lmo": ["muon", "adamw", "nadam", "adan", "mars", "soap", "lion", "signum",
            "normalized_sgd", "normuon", "adamuon", "lmo_momentum", "delayed",
            "error_feedback", "ParamHistory", "Spectral", "Frobenius", "Sign",
            "newton_schulz", "chain", "clip_by_global_norm", "partition", "warmup_cosine",
            "apply_updates", "TorchOptimizer", "build"],
    "theory": ["Bound", "get", "all_bounds"],
    "verify": ["run", "check_bound"],
    "gpu_runs": ["TrainConfig"],   # the loop: from gpu_runs.train import train (gpu_runs.train is the module)
}


@pytest.mark.parametrize("pkg", sorted(REQUIRED))
def test_every_name_of_all_resolves(pkg):
    mod = importlib.import_module(pkg)
    assert mod.__doc__ and "placeholder" not in mod.__doc__, f"{pkg}: package docstring missing"
    names = getattr(mod, "__all__", None)
    assert names, f"{pkg}.__all__ is missing or empty"
    assert len(set(names)) == len(names), f"{pkg}.__all__ has duplicates"
    missing = [n for n in names if not hasattr(mod, n)]
    assert not missing, f"{pkg}.__all__ names that do not resolve: {missing}"


@pytest.mark.parametrize("pkg", sorted(REQUIRED))
def test_required_names_are_public(pkg):
    mod = importlib.import_module(pkg)
    absent = [n for n in REQUIRED[pkg] if n not in getattr(mod, "__all__", ())]
    assert not absent, f"{pkg} lacks public names {absent}"


def test_the_first_line_a_user_types():
    import torch

    import lmo
    params = {"w": torch.randn(4, 3)}
    opt = lmo.muon(lr=0.02)
    state = opt.init(params)
    updates, state = opt.update({"w": torch.randn(4, 3)}, state, params)
    new = lmo.apply_updates(params, updates)
    assert new["w"].shape == (4, 3) and not torch.equal(new["w"], params["w"])


def _readme_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_has_python_examples():
    assert len(_readme_blocks()) >= 2


@pytest.mark.parametrize("i", range(len(_readme_blocks())))
def test_readme_example_runs(i, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = _readme_blocks()[i]
    exec(compile(code, f"README.md python block {i}", "exec"), {"__name__": "readme_example"})
