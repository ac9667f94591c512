"""The public surface of ``lmo``: every name of ``__all__`` imports, and the package
docstring's tour runs as written (with real params)."""
import re

import torch

import lmo


def test_every_name_in_all_is_exported_and_unique():
    assert len(set(lmo.__all__)) == len(lmo.__all__)
    for name in lmo.__all__:
        assert getattr(lmo, name) is not None, name
    for name in ("muon", "delayed", "error_feedback", "adamw", "Spectral", "TorchOptimizer",
                 "newton_schulz", "chain", "clip_by_global_norm", "partition", "warmup_cosine",
                 "apply_updates", "build", "ParamHistory", "choose_ns_dtype"):
        assert name in lmo.__all__, name


def test_docstring_tour_runs():
    code = "\n".join(line[4:] for line in lmo.__doc__.split("::", 1)[1].split("\n\n")[1].splitlines())
    assert "lmo.muon(lr=0.02)" in code
    g = torch.Generator().manual_seed(0)
    params = {"w": torch.randn(6, 4, generator=g)}
    grads = {"w": torch.randn(6, 4, generator=g)}
    scope = {"params": params, "grads": grads}
    exec(compile(code, "lmo.__doc__", "exec"), scope)   # noqa: S102 - our own docstring
    assert not torch.equal(scope["params"]["w"], params["w"])


def test_torch_adapter_example_from_the_docstring():
    model = torch.nn.Linear(4, 3, bias=False)
    opt = lmo.TorchOptimizer(lmo.muon(0.02), model.named_parameters())
    before = model.weight.detach().clone()
    model(torch.randn(5, 4)).square().sum().backward()
    opt.step()
    assert not torch.equal(before, model.weight)
    assert re.search(r"TorchOptimizer\(lmo\.muon\(0\.02\)", lmo.__doc__)


def test_newton_schulz_is_the_function_and_its_module_has_another_name():
    G = torch.randn(5, 3, generator=torch.Generator().manual_seed(1))
    import lmo.polar_factor
    from lmo.polar_factor import newton_schulz as fn
    assert lmo.newton_schulz is fn
    assert torch.equal(lmo.newton_schulz(G, dtype=torch.float32), fn(G, dtype=torch.float32))
    assert lmo.polar_factor.choose_ns_dtype("cpu") in (torch.float32, torch.bfloat16)
    assert lmo.polar_factor.choose_ns_dtype is lmo.choose_ns_dtype
