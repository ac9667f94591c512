"""lmo.ns_dtype: the NS dtype chosen from what the machine does (never bf16 on a CPU
without bf16 instructions), the environment override, and Muon's "auto" using it."""
import pytest
import torch

from lmo import ns_dtype as nd
from lmo.alias import muon
from lmo.polar_factor import choose_ns_dtype, newton_schulz


@pytest.fixture(autouse=True)
def _fresh_cache(monkeypatch):
    monkeypatch.delenv(nd.ENV_VAR, raising=False)
    nd._decide.cache_clear()
    yield
    nd._decide.cache_clear()


def _cpuinfo(tmp_path, flags):
    p = tmp_path / "cpuinfo"
    p.write_text(f"processor\t: 0\nmodel name\t: test\nflags\t\t: {flags}\n")
    return str(p)


def test_cpu_flag_parsing(tmp_path):
    assert not nd.cpu_has_bf16_instructions(_cpuinfo(tmp_path, "fpu sse2 avx2 fma"))
    assert nd.cpu_has_bf16_instructions(_cpuinfo(tmp_path, "avx2 avx512f avx512_bf16"))
    assert nd.cpu_has_bf16_instructions(_cpuinfo(tmp_path, "avx2 amx_bf16 amx_tile"))
    assert not nd.cpu_has_bf16_instructions(str(tmp_path / "missing"))


def test_avx2_cpu_gets_fp32_without_measuring(monkeypatch):
    monkeypatch.setattr(nd, "cpu_has_bf16_instructions", lambda *a: False)
    monkeypatch.setattr(nd, "_cpu_bf16_time_ratio", lambda *a: pytest.fail("must not measure"))
    dtype, why = nd.ns_dtype_decision("cpu")
    assert dtype == torch.float32 and "without bf16" in why


@pytest.mark.parametrize("ratio,expected", [(0.3, torch.bfloat16), (0.79, torch.bfloat16),
                                            (0.95, torch.float32), (30.0, torch.float32)])
def test_bf16_cpu_decided_by_measurement(monkeypatch, ratio, expected):
    monkeypatch.setattr(nd, "cpu_has_bf16_instructions", lambda *a: True)
    monkeypatch.setattr(nd, "_cpu_bf16_time_ratio", lambda *a: ratio)
    assert nd.choose_ns_dtype("cpu") == expected


def test_decision_is_cached_once_per_device(monkeypatch):
    calls = []
    monkeypatch.setattr(nd, "cpu_has_bf16_instructions", lambda *a: True)
    monkeypatch.setattr(nd, "_cpu_bf16_time_ratio", lambda *a: calls.append(1) or 0.5)
    for _ in range(3):
        nd.choose_ns_dtype("cpu")
    assert len(calls) == 1


def test_environment_override(monkeypatch):
    monkeypatch.setenv(nd.ENV_VAR, "float32")
    assert choose_ns_dtype("cpu") == torch.float32
    monkeypatch.setenv(nd.ENV_VAR, "bf16")
    assert choose_ns_dtype("cpu") == torch.bfloat16
    monkeypatch.setenv(nd.ENV_VAR, "int8")
    with pytest.raises(ValueError, match=nd.ENV_VAR):
        choose_ns_dtype("cpu")


def test_real_measurement_returns_a_ns_dtype():
    assert choose_ns_dtype(torch.device("cpu")) in (torch.float32, torch.bfloat16)
    assert nd._cpu_bf16_time_ratio(n=32, repeats=1) > 0


@pytest.mark.parametrize("forced", ["float32", "bfloat16"])
def test_auto_and_none_follow_the_choice(monkeypatch, forced):
    monkeypatch.setenv(nd.ENV_VAR, forced)
    want = getattr(torch, forced)
    G = torch.randn(6, 9, generator=torch.Generator().manual_seed(0))
    assert torch.equal(newton_schulz(G, dtype="auto"), newton_schulz(G, dtype=want))
    p = {"w": torch.randn(6, 9)}
    g = {"w": torch.randn(6, 9)}
    ref = muon(0.02, ns_dtype=want)
    u_ref, _ = ref.update(g, ref.init(p), p)
    for opt in (muon(0.02), muon(0.02, ns_dtype=None), muon(0.02, ns_dtype="auto")):
        u, _ = opt.update(g, opt.init(p), p)
        assert torch.equal(u["w"], u_ref["w"])


@pytest.mark.parametrize("bad", ["fast", torch.int32])
def test_bad_ns_dtype_raises(bad):
    with pytest.raises(ValueError, match="dtype"):
        muon(0.02, ns_dtype=bad)
    with pytest.raises(ValueError, match="dtype"):
        newton_schulz(torch.randn(3, 3), dtype=bad)
