"""lmo.ns_dtype: what ns_dtype="auto" means is a pure function of the device (bf16 on CUDA
unless told it has no native bf16, fp32 elsewhere): no timing, no environment variable, no
cache; the optimizers take names and dtypes and refuse anything else naming ns_dtype."""
import ast
import inspect
import time
from pathlib import Path

import pytest
import torch

import lmo
from lmo import ns_dtype as nd
from lmo.muon_family import adamuon, muon, normuon
from lmo.layer_geometry import scion
from lmo.polar_factor import choose_ns_dtype, newton_schulz, resolve_dtype

LMO = Path(lmo.__file__).resolve().parent


@pytest.mark.parametrize("device,native,want", [
    ("cpu", None, torch.float32), ("cpu", True, torch.float32), ("mps", None, torch.float32),
    ("cuda", None, torch.bfloat16), ("cuda", True, torch.bfloat16), ("cuda:1", True, torch.bfloat16),
    ("cuda", False, torch.float32)])
def test_auto_is_a_function_of_the_device(device, native, want):
    assert nd.choose_ns_dtype(device, native) == want
    assert nd.ns_dtype_decision(torch.device(device), native)[0] == want
    assert isinstance(nd.ns_dtype_decision(device, native)[1], str)


def test_no_timing_no_environment(monkeypatch):
    """Deciding never reads a clock nor the environment, and gives the same answer every time."""
    def no_clock(*a):
        raise AssertionError("the NS dtype must not be decided by timing")

    for name in ("perf_counter", "perf_counter_ns", "monotonic", "time", "process_time"):
        monkeypatch.setattr(time, name, no_clock)
    monkeypatch.setenv("LMO_NS_DTYPE", "bfloat16")
    answers = {nd.choose_ns_dtype("cpu") for _ in range(10)}
    assert answers == {torch.float32}
    assert resolve_dtype("auto", "cpu") == torch.float32


def test_lmo_reads_no_environment_and_times_nothing():
    """Grep-style: no module of lmo outside its benchmarks reads os.environ / getenv or a
    clock, and lmo.ns_dtype keeps no cache."""
    offenders = []
    for f in LMO.rglob("*.py"):
        if "bench" in f.relative_to(LMO).parts:
            continue
        text = f.read_text()
        for needle in ("os.environ", "getenv", "perf_counter", "lru_cache", "functools.cache"):
            if needle in text:
                offenders.append(f"{f.name}: {needle}")
    assert offenders == []
    tree = ast.parse(inspect.getsource(nd))
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Import) and any(a.name == "time" for a in n.names)]


def test_monkeypatched_environment_changes_nothing(monkeypatch):
    p = {"w": torch.randn(6, 9, generator=torch.Generator().manual_seed(1))}
    g = {"w": torch.randn(6, 9, generator=torch.Generator().manual_seed(2))}

    def step():
        opt = muon(0.02)
        return opt.update(g, opt.init(p), p)[0]["w"]

    before = step()
    for value in ("bfloat16", "float16", "nonsense"):
        monkeypatch.setenv("LMO_NS_DTYPE", value)
        assert torch.equal(step(), before)


def test_auto_none_and_names_on_cpu_are_fp32():
    G = torch.randn(6, 9, generator=torch.Generator().manual_seed(0))
    ref = newton_schulz(G, dtype=torch.float32)
    for d in ("auto", "float32", "fp32"):
        assert torch.equal(newton_schulz(G, dtype=d), ref)
    assert not torch.equal(newton_schulz(G, dtype="bfloat16"), ref)
    p, g = {"w": torch.randn(6, 9)}, {"w": torch.randn(6, 9)}
    want = muon(0.02, ns_dtype=torch.float32)
    u_ref, _ = want.update(g, want.init(p), p)
    for opt in (muon(0.02), muon(0.02, ns_dtype=None), muon(0.02, ns_dtype="auto"),
                muon(0.02, ns_dtype="float32")):
        u, _ = opt.update(g, opt.init(p), p)
        assert torch.equal(u["w"], u_ref["w"])


def test_names_are_the_dtypes():
    p, g = {"w": torch.randn(6, 9)}, {"w": torch.randn(6, 9)}
    for make in (muon, lambda lr, **kw: normuon(lr, **kw), lambda lr, **kw: adamuon(lr, **kw)):
        a, b = make(0.02, ns_dtype="bfloat16"), make(0.02, ns_dtype=torch.bfloat16)
        assert torch.equal(a.update(g, a.init(p), p)[0]["w"], b.update(g, b.init(p), p)[0]["w"])


@pytest.mark.parametrize("bad", ["fast", "int8", torch.int32, 3])
def test_bad_ns_dtype_raises(bad):
    for make in (muon, normuon, adamuon, scion):
        with pytest.raises(ValueError, match="ns_dtype"):
            make(0.02, ns_dtype=bad)
    with pytest.raises(ValueError, match="dtype"):
        newton_schulz(torch.randn(3, 3), dtype=bad)


def test_public_name_is_the_pure_function():
    assert lmo.choose_ns_dtype is choose_ns_dtype is nd.choose_ns_dtype
    assert nd.dtype_name(torch.bfloat16) == "bfloat16"
