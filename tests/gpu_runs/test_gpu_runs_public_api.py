"""``import gpu_runs`` gives the main names; every name of ``__all__`` exists; the trainer's
old import paths (``from gpu_runs.train import TrainConfig, build_optimizer, ...``) still work.

Note: the package attribute ``gpu_runs.train`` is the function ``train`` (as the issue asks);
the module is reached with ``from gpu_runs.train import ...`` or importlib."""
import importlib

import gpu_runs
from gpu_runs import recipe

T = importlib.import_module("gpu_runs.train")


def test_every_name_of_all_imports():
    for name in gpu_runs.__all__:
        assert getattr(gpu_runs, name) is not None, name
    assert gpu_runs.TrainConfig is recipe.TrainConfig and callable(gpu_runs.train)


def test_old_paths_of_the_recipe_still_work():
    for name in ("TrainConfig", "build_optimizer", "base_optimizer", "peak_lr", "loss_and_grads", "evaluate",
                 "make_history", "MODES", "save_checkpoint"):
        assert hasattr(T, name), name
    assert T.TrainConfig is recipe.TrainConfig


def test_from_imports_of_the_module_and_the_function():
    from gpu_runs import train
    from gpu_runs.train import TrainConfig, main
    assert train is T.train and TrainConfig is recipe.TrainConfig and callable(main)
