"""``import gpu_runs`` gives the main names; every name of ``__all__`` exists; the trainer's
old import paths (gpu_runs.train.TrainConfig, build_optimizer, ...) still work."""
import gpu_runs
import gpu_runs.train as T
from gpu_runs import recipe


def test_every_name_of_all_imports():
    for name in gpu_runs.__all__:
        assert getattr(gpu_runs, name) is not None, name
    assert gpu_runs.TrainConfig is recipe.TrainConfig and callable(gpu_runs.train)


def test_old_paths_of_the_recipe_still_work():
    for name in ("TrainConfig", "build_optimizer", "base_optimizer", "peak_lr", "loss_and_grads", "evaluate",
                 "make_history", "MODES", "save_checkpoint"):
        assert hasattr(T, name), name
    assert T.TrainConfig is recipe.TrainConfig
