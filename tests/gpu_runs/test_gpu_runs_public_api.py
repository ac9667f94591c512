"""``import gpu_runs`` gives the main names; every name of ``__all__`` exists; the recipe's names
have one home, ``gpu_runs.recipe`` (``gpu_runs.train`` no longer re-exports them, issue 40).

The package attribute ``gpu_runs.train`` is the module (the loop and ``python -m
gpu_runs.train``), never the function: the package does not re-export ``train`` (issue 28,
item 4), so the function is ``from gpu_runs.train import train``."""
import types

import gpu_runs
import gpu_runs.train as T
from gpu_runs import recipe


def test_every_name_of_all_imports():
    for name in gpu_runs.__all__:
        assert getattr(gpu_runs, name) is not None, name
    assert gpu_runs.TrainConfig is recipe.TrainConfig
    assert "train" not in gpu_runs.__all__ and "TrainResult" not in gpu_runs.__all__


def test_the_recipe_has_one_home():
    for name in ("TrainConfig", "build_optimizer", "base_optimizer", "peak_lr", "loss_and_grads", "evaluate",
                 "make_history", "MODES"):
        assert hasattr(recipe, name), name
    for name in ("base_optimizer", "peak_lr", "save_checkpoint", "COMPILE_BACKEND"):   # not used by the loop
        assert not hasattr(T, name), f"gpu_runs.train re-exports {name} again"


def test_from_imports_of_the_module_and_the_function():
    from gpu_runs import train as train_module
    from gpu_runs.recipe import TrainConfig
    from gpu_runs.train import main, train
    assert isinstance(train_module, types.ModuleType) and train_module is T
    assert train is T.train and TrainConfig is recipe.TrainConfig and callable(main)
