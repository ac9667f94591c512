"""The trainer's longer and shaped delays (issue 41): a uniform tau > 1, the per-stage profile of a
P-stage pipeline, one delayed group (the attribution), and the correctors. Each equals a
hand-written loop that keeps its own queue of updates per block (no lmo wrapper), the new
fields leave every earlier run's JSON and key as they were, and what they cannot do is refused."""
import math

import pytest

from gpu_runs.model import stage_of_params
from gpu_runs.parallelism import Parallelism
from gpu_runs.recipe import TrainConfig, loss_and_grads
from gpu_runs.train import train
from paper_figs.records.identity import run_key
from paper_figs.records.runs import full_config
from test_train import FAST, _setup, losses


def _hand_loop(cfg, tau_of, coef_of=lambda tau: 0.0):
    """Per block k: x_{t+1} = x_t + d_{t - tau_k} (d_{<0} = 0), the gradient at
    z_t = x_t + c(tau_k) a_{t-1} with a_{t-1} = x_t - x_{t-1} (the last applied update)."""
    model, x, inner, batcher = _setup(cfg)
    tau = tau_of(model, x)
    state, queue, last, ref = inner.init(x), {k: [] for k in x}, {k: 0.0 * v for k, v in x.items()}, []
    for t in range(cfg.steps):
        z = {k: x[k] + coef_of(tau[k]) * last[k] if coef_of(tau[k]) else x[k] for k in x}
        loss, g = loss_and_grads(model, z, *batcher.batch(t), False)
        ref.append(float(loss))
        d, state = inner.update(g, state, x)
        new = {}
        for k in x:
            queue[k].append(d[k])
            a = queue[k].pop(0) if len(queue[k]) > tau[k] else 0.0 * d[k]
            new[k] = x[k] + a
            last[k] = a
        x = new
    return ref


def _hidden(name: str) -> bool:
    return name.startswith("layers.") and "norm" not in name


@pytest.mark.parametrize("opt", ["adamw", "muon"])
def test_uniform_tau_2_equals_a_two_step_queue(opt):
    cfg = TrainConfig(optimizer=opt, mode="2bw", tau=2, **FAST)
    ref = _hand_loop(cfg, lambda m, x: {k: 2 for k in x})
    assert losses(train(cfg, progress=False)) == pytest.approx(ref, rel=1e-6, abs=1e-6)
    one = train(TrainConfig(optimizer=opt, mode="2bw", **FAST), progress=False)
    assert losses(one)[2:] != ref[2:]   # tau 2 is not tau 1


@pytest.mark.parametrize("group", ["matrix", "other"])
def test_one_delayed_group_leaves_the_other_synchronous(group):
    cfg = TrainConfig(optimizer="muon", mode="2bw", delayed_groups=group, **FAST)
    ref = _hand_loop(cfg, lambda m, x: {k: int(_hidden(k) == (group == "matrix")) for k in x})
    assert losses(train(cfg, progress=False)) == pytest.approx(ref, rel=1e-6, abs=1e-6)


def test_pipedream_profile_delays_stage_s_by_p_minus_1_minus_s():
    cfg = TrainConfig(optimizer="adamw", mode="2bw", delay_profile="pipedream", stages=2, **FAST)
    ref = _hand_loop(cfg, lambda m, x: {k: 1 - s for k, s in stage_of_params(m, 2).items()})
    assert losses(train(cfg, progress=False)) == pytest.approx(ref, rel=1e-6, abs=1e-6)
    assert cfg.delay.tau == 1 and not cfg.delay.one_step   # tau_s = P - 1 - s: 1 then 0


@pytest.mark.parametrize("tau", [1, 2])
def test_weight_prediction_takes_the_gradient_at_x_plus_tau_a(tau):
    cfg = TrainConfig(optimizer="muon", mode="2bw", tau=tau, corrector="weight_prediction", **FAST)
    ref = _hand_loop(cfg, lambda m, x: {k: tau for k in x}, coef_of=lambda t: float(t))
    assert losses(train(cfg, progress=False)) == pytest.approx(ref, rel=1e-6, abs=1e-6)
    plain = _hand_loop(TrainConfig(optimizer="muon", mode="2bw", tau=tau, **FAST), lambda m, x: {k: tau for k in x})
    assert ref[2:] != plain[2:]   # the look-ahead changes the trajectory


@pytest.mark.parametrize("corrector", ["nesterov_lookahead", "dc_asgd_adaptive", "dc_asgd_ema", "lr_damping"])
def test_every_corrector_trains(corrector):
    res = train(TrainConfig(optimizer="adamw", mode="2bw", tau=2, corrector=corrector, **FAST), progress=False)
    assert len(res.log) == FAST["steps"] and math.isfinite(res.final_val_loss)


def test_new_fields_off_keep_every_earlier_key():
    for kw in (dict(mode="sync"), dict(mode="2bw"), dict(mode="2bw", ef=True), dict(mode="pipedream", stages=3)):
        plain = TrainConfig(optimizer="muon", **kw).as_dict()
        assert not {"tau", "corrector", "delay_profile", "delayed_groups"} & set(plain)
    # the delay's own tau spelled out is the same run: same JSON, same key
    assert TrainConfig(mode="2bw", tau=1).as_dict() == TrainConfig(mode="2bw").as_dict()
    assert TrainConfig(mode="sync", tau=0).as_dict() == TrainConfig(mode="sync").as_dict()
    assert run_key(full_config(TrainConfig, dict(mode="2bw", tau=1))) == \
        run_key(full_config(TrainConfig, dict(mode="2bw")))
    assert run_key(full_config(TrainConfig, dict(mode="2bw", tau=2))) != \
        run_key(full_config(TrainConfig, dict(mode="2bw")))
    assert TrainConfig(mode="2bw", tau=4).as_dict()["tau"] == 4


@pytest.mark.parametrize("kw, match", [
    (dict(mode="sync", corrector="weight_prediction"), "corrector.*2bw"),
    (dict(mode="2bw", ef=True, tau=2), "tau"),
    (dict(mode="2bw", tau=0), "tau >= 1"),
    (dict(mode="2bw", tau=2, sync_start=2), "one-step delay"),
    (dict(mode="2bw", corrector="dc_asgd"), "--dc-asgd"),
    (dict(mode="2bw", corrector="nope"), "corrector"),
    (dict(mode="2bw", delayed_groups="embed"), "delayed-groups"),
    (dict(mode="2bw", delay_profile="pipedream", tau=2), "stages - 1"),
    (dict(mode="2bw", tau=2, corrector="dc_asgd_ema", parallel=Parallelism(schedule="pipedream")),
     "--schedule pipedream does not run --delay 2bw"),
])
def test_refused_with_the_option_named(kw, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(**{**FAST, **kw}).validate()
