"""lmo refuses or handles clearly what issue 30 found it took silently: >2-D weights for
Muon, state of the wrong shape, a schedule's non-finite or negative lr, unknown optimizer
names, a bool lr, and embeddings named ``emb`` routed to Muon."""
import pytest
import torch

import lmo
from lmo.base import load_state_dict, state_dict
from lmo.combine import muon_labels
from lmo.registry import OPTIMIZERS, build

CONV = (8, 3, 3, 3)


def _step(opt, p, g):
    s = opt.init(p)
    u, s = opt.update(g, s, p)
    return u, s


@pytest.mark.parametrize("ctor", [lmo.muon, lmo.normuon, lmo.adamuon])
def test_matrix_optimizers_refuse_a_conv_kernel_by_default(ctor):
    w = torch.randn(CONV)
    with pytest.raises(ValueError, match=r"conv.*flatten=True.*\(8, 27\)"):
        ctor(0.02).init({"conv": w})


@pytest.mark.parametrize("ctor", [lmo.normuon, lmo.adamuon])
def test_second_moment_muons_flatten_too(ctor):
    gen = torch.Generator().manual_seed(1)
    w, g = torch.randn(CONV, generator=gen), torch.randn(CONV, generator=gen)
    u, _ = _step(ctor(0.02, flatten=True), {"conv": w}, {"conv": g})
    u2, _ = _step(ctor(0.02), {"conv": w.reshape(8, 27)}, {"conv": g.reshape(8, 27)})
    assert torch.equal(u["conv"], u2["conv"].reshape(CONV))


def test_muon_flatten_optimizes_the_out_by_in_kk_matrix():
    gen = torch.Generator().manual_seed(0)
    w, g = torch.randn(CONV, generator=gen), torch.randn(CONV, generator=gen)
    u, s = _step(lmo.muon(0.02, flatten=True), {"conv": w}, {"conv": g})
    u2, _ = _step(lmo.muon(0.02), {"conv": w.reshape(8, 27)}, {"conv": g.reshape(8, 27)})
    assert u["conv"].shape == CONV
    assert torch.equal(u["conv"], u2["conv"].reshape(CONV))
    assert s.momentum["conv"].shape == (8, 27)


def test_muon_flatten_false_keeps_leading_dims_as_a_batch():
    w, g = torch.randn(CONV), torch.randn(CONV)
    u, _ = _step(lmo.muon(0.02, flatten=False), {"w": w}, {"w": g})
    u1, _ = _step(lmo.muon(0.02), {"w": w[1, 2]}, {"w": g[1, 2]})
    torch.testing.assert_close(u["w"][1, 2], u1["w"], rtol=1e-5, atol=1e-6)


def test_muon_stack_of_matrices_unchanged():
    """3-D (an MoE expert stack) stays a batch by default: the same update as flatten=False."""
    w, g = torch.randn(4, 6, 5), torch.randn(4, 6, 5)
    a, _ = _step(lmo.muon(0.02), {"w": w}, {"w": g})
    b, _ = _step(lmo.muon(0.02, flatten=False), {"w": w}, {"w": g})
    assert torch.equal(a["w"], b["w"])


def test_muon_flatten_value_checked():
    with pytest.raises(ValueError, match="flatten"):
        lmo.muon(0.02, flatten="yes")


def test_state_of_another_shape_refused():
    opt = lmo.adamw(0.1)
    other = state_dict(opt.init({"w": torch.zeros(3, 4)}))
    with pytest.raises(ValueError, match=r"'.*w' has shape \(3, 4\).*needs \(4, 4\)"):
        load_state_dict(opt.init({"w": torch.zeros(4, 4)}), other)


@pytest.mark.parametrize("value, kind", [(float("nan"), FloatingPointError), (float("inf"), FloatingPointError),
                                         (-0.01, ValueError), (torch.tensor(float("nan")), FloatingPointError)])
@pytest.mark.parametrize("ctor", [lmo.adamw, lmo.muon, lmo.lion, lmo.soap, lmo.normuon])
def test_schedule_with_a_bad_lr_refused(ctor, value, kind):
    opt = ctor(lambda t: 0.01 if int(t) == 0 else value)
    p = {"w": torch.randn(4, 3)}
    s = opt.init(p)
    _, s = opt.update({"w": torch.randn(4, 3)}, s, p)
    with pytest.raises(kind, match="lr schedule at step 1 is "):
        opt.update({"w": torch.randn(4, 3)}, s, p)


def test_schedule_returning_zero_is_allowed():
    opt = lmo.adamw(lambda t: 0.0, weight_decay=0.0)
    p = {"w": torch.randn(3)}
    u, _ = _step(opt, p, {"w": torch.randn(3)})
    assert torch.equal(u["w"], torch.zeros(3))


def test_unknown_optimizer_lists_the_valid_names():
    with pytest.raises(ValueError, match=r"unknown optimizer 'nosuch'; valid names: adamuon, adamw, adan"):
        build("nosuch", {"w": torch.zeros(2, 2)})
    with pytest.raises(KeyError) as e:         # still a KeyError for mapping users
        OPTIMIZERS["nosuch"]
    assert str(e.value).startswith("unknown optimizer 'nosuch'; valid names: ")


@pytest.mark.parametrize("ctor", [lmo.adamw, lmo.muon, lmo.lion, lmo.signum, lmo.nadam, lmo.soap])
def test_bool_lr_refused(ctor):
    with pytest.raises(ValueError, match="lr"):
        ctor(True)


@pytest.mark.parametrize("name", ["emb.weight", "tok_emb.weight", "pos_embedding", "classifier.weight"])
def test_embeddings_and_heads_stay_out_of_muon(name):
    labels = muon_labels({name: torch.zeros(10, 4), "blocks.0.attn.wq.weight": torch.zeros(4, 4)})
    assert labels == {name: "other", "blocks.0.attn.wq.weight": "matrix"}
