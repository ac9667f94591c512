"""The schedules' action lists: weight-version semantics, completeness, deadlock freedom
and bubble time, checked with the unit-time simulator (no processes)."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpu_runs.parallelism import SCHEDULES, check_schedule_args, check_sync_args
from gpu_runs.pipeline.schedules import all_actions, ideal_bubble_ratio, simulate, stage_actions, with_evals


def expected_version(schedule, stage, P, M, mb):
    """Number of updates applied to the weights microbatch mb's forward runs on."""
    if schedule == "pipedream":
        return max(0, mb - (P - 1 - stage))  # u_{k - tau_s}, tau_s = P - 1 - s
    t = mb // M
    return t if schedule in ("gpipe", "1f1b") else max(0, t - 1)  # 2bw: x_1 = x_0


cases = st.tuples(st.sampled_from(SCHEDULES), st.integers(1, 5), st.integers(1, 7), st.integers(1, 6))


@given(cases)
def test_versions_and_completeness(case):
    schedule, P, M, T = case
    if schedule == "2bw" and M < P:
        M = P
    acts = all_actions(schedule, P, M, T)
    n_mb = T if schedule == "pipedream" else T * M
    for s, a in enumerate(acts):
        fs = [x.mb for x in a if x.kind == "F"]
        bs = [x.mb for x in a if x.kind == "B"]
        assert fs == list(range(n_mb)) and bs == list(range(n_mb))
        assert sorted(x.step for x in a if x.kind == "U") == list(range(T))
        assert sorted(x.step for x in a if x.kind == "R") == list(range(T))
    res = simulate(acts)  # raises on deadlock
    for (s, mb), v in res.versions.items():
        assert v == expected_version(schedule, s, P, M, mb), (s, mb)
    # every step's gradient comes from one version (the stash) except pipedream's own step
    for (s, step), vs in res.grad_versions.items():
        assert len(vs) == 1


@given(st.integers(1, 5), st.integers(1, 8))
def test_flushed_step_time_is_ideal_bubble(P, M):
    """A flushed schedule's step takes (M + P - 1)(t_f + t_b) units: busy time times
    (M + P - 1) / M; 2bw's whole run takes the busy time plus one fill (P - 1)(t_f + t_b)."""
    T = 3
    for schedule in ("gpipe", "1f1b"):
        r = simulate(all_actions(schedule, P, M, T))
        assert r.makespan == pytest.approx(T * M * 3 * ideal_bubble_ratio(P, M))
    if M >= P:
        r = simulate(all_actions("2bw", P, M, T))
        assert r.makespan == pytest.approx(T * M * 3 + (P - 1) * 3)


def test_pipedream_clip_all_reduce_is_a_barrier():
    acts = all_actions("pipedream", 4, 1, 12)
    assert simulate(acts, global_clip=False).makespan == pytest.approx(12 * 3 + 3 * 3)
    assert simulate(acts, global_clip=True).makespan > 12 * 3 + 3 * 3


def test_2bw_tail_creates_x_T_only():
    a = stage_actions("2bw", 0, 2, 2, 4)
    tail = [x for x in a if x.kind == "U" and x.step >= 2]
    assert [(x.step, x.apply) for x in tail] == [(2, True), (3, False)]


@pytest.mark.parametrize("kw, word", [
    (dict(schedule="2bw", num_stages=4, microbatches=3, steps=2), "microbatches"),
    (dict(schedule="1f1b", num_stages=4, microbatches=4, steps=2, num_layers=3), "num_stages"),
    (dict(schedule="zb", num_stages=2, microbatches=2, steps=2), "schedule"),
    (dict(schedule="gpipe", num_stages=2, microbatches=0, steps=2), "microbatches"),
    (dict(schedule="gpipe", num_stages=2, microbatches=2, steps=0), "steps"),
])
def test_bad_arguments_refused(kw, word):
    with pytest.raises(ValueError, match=word):
        check_schedule_args(**kw)


def test_m_less_than_p_allowed_for_flushed_schedules():
    for schedule in ("gpipe", "1f1b"):
        simulate(all_actions(schedule, 4, 2, 2))


@given(cases)
def test_evals_see_the_weights_after_each_step(case):
    """E(t) on every stage evaluates x_{t+1}: t+1 updates (sync, pipedream), t (2bw,
    where x_{t+1} = x_t + d_{t-1} is the t-th version after x_0 = x_1)."""
    schedule, P, M, T = case
    if schedule == "2bw" and M < P:
        M = P
    acts = [with_evals(a, schedule, M, range(T)) for a in all_actions(schedule, P, M, T)]
    res = simulate(acts)
    for s in range(P):
        for t in range(T):
            want = t if schedule == "2bw" else t + 1
            assert res.eval_versions[(s, t)] == want, (s, t)


@given(st.sampled_from(["gpipe", "1f1b", "2bw"]), st.integers(1, 4), st.integers(1, 6), st.integers(2, 6), st.data())
def test_resumed_list_is_the_tail_of_the_full_one(schedule, P, M, T, data):
    """Resuming after k steps runs exactly the full run's F / B from microbatch kM on,
    and every step >= k (for 2bw also k - 1, the checkpoint's pending d) gets one U."""
    M = max(M, P) if schedule == "2bw" else M
    k = data.draw(st.integers(1, T - 1))
    for s in range(P):
        full = [a for a in stage_actions(schedule, s, P, M, T) if a.kind in "FB" and a.mb >= k * M]
        part = stage_actions(schedule, s, P, M, T, start=k)
        assert [a for a in part if a.kind in "FB"] == full
        first = k - 1 if schedule == "2bw" else k
        assert sorted(a.step for a in part if a.kind == "U") == list(range(first, T))


def test_pipedream_resumed_list_is_the_tail():
    """Resuming pipedream after k steps: a fresh 1F1B warm-up from microbatch k, every
    F / B / U of microbatches >= k once, in the full run's per-kind order."""
    for s in range(3):
        full = stage_actions("pipedream", s, 3, 1, 9)
        part = stage_actions("pipedream", s, 3, 1, 9, start=4)
        for kind in "FBU":
            assert [a for a in part if a.kind == kind] == [a for a in full if a.kind == kind and a.mb >= 4
                                                         or a.kind == kind == "U" and a.step >= 4]


# ----------------------------------------------------------------------------- mitigations
def mitigated_version(t, T, K, C):
    """Versions x_t is after x_0, from the trainer's phases alone: x_{t'+1} is a new
    version unless t' starts an asynchronous run (nothing pending: x_{t'+1} = x_{t'})."""
    from lmo.delay import phase

    ph = [phase(u, K, C, T) for u in range(T)]
    starts = [u for u in range(T) if ph[u] == "async" and (u == 0 or ph[u - 1] == "sync")]
    return t - sum(1 for a in starts if a < t)


mit = st.tuples(st.integers(1, 4), st.integers(0, 4), st.integers(1, 8), st.integers(0, 8), st.integers(0, 8))


@given(mit)
def test_mitigated_2bw_versions_evals_and_bubbles(case):
    """sync_start K / sync_cooldown C: every stage's step t runs on version
    mitigated_version(t), E(t) sees mitigated_version(t + 1), and the makespan is K + C
    flushed steps, (M + P - 1) * 3 each, plus the 2BW stream of the rest with one fill."""
    P, dm, T, K, C = case
    M = P + dm
    C = min(C, T)
    acts = [with_evals(a, "2bw", M, range(T)) for a in all_actions("2bw", P, M, T, K, C)]
    for a in acts:
        assert [x.mb for x in a if x.kind == "F"] == list(range(T * M))
        assert sorted(x.step for x in a if x.kind == "U") == list(range(T))
    res = simulate(acts)
    for (s, mb), v in res.versions.items():
        assert v == mitigated_version(mb // M, T, K, C), (s, mb)
    for (s, t), v in res.eval_versions.items():
        assert v == mitigated_version(t + 1, T, K, C), (s, t)
    n_sync = sum(1 for t in range(T) if t < K or t >= T - C)
    want = n_sync * (M + P - 1) * 3 + (T - n_sync) * M * 3 + (P - 1) * 3 * (n_sync < T)
    assert simulate(all_actions("2bw", P, M, T, K, C)).makespan == pytest.approx(want)


def test_mitigated_2bw_without_mitigation_is_plain_2bw():
    assert all_actions("2bw", 3, 4, 5, 0, 0) == all_actions("2bw", 3, 4, 5)


@given(st.integers(1, 3), st.integers(0, 2), st.integers(2, 8), st.integers(0, 4), st.integers(0, 4), st.data())
def test_mitigated_resumed_list_is_the_tail(P, dm, T, K, C, data):
    """Resume after k steps: the full run's F / B from kM on; one U per step >= k, plus
    U(k-1) (creating x_{k+1} from the pending update) when steps k-1 and k are both async."""
    from lmo.delay import phase

    M, C = P + dm, min(C, T)
    k = data.draw(st.integers(1, T - 1))
    both_async = phase(k - 1, K, C, T) == phase(k, K, C, T) == "async"
    for s in range(P):
        full = stage_actions("2bw", s, P, M, T, sync_start=K, sync_cooldown=C)
        part = stage_actions("2bw", s, P, M, T, start=k, sync_start=K, sync_cooldown=C)
        assert [a for a in part if a.kind in "FB"] == [a for a in full if a.kind in "FB" and a.mb >= k * M]
        us = [a.step for a in part if a.kind == "U"]
        assert sorted(us) == ([k - 1] if both_async else []) + list(range(k, T))


@pytest.mark.parametrize("kw, word", [
    (dict(schedule="1f1b", steps=4, sync_start=2), "2bw"),
    (dict(schedule="2bw", steps=4, sync_cooldown=5), "sync_cooldown"),
    (dict(schedule="2bw", steps=4, sync_start=-1), "sync_start"),
])
def test_bad_sync_arguments_refused(kw, word):
    with pytest.raises(ValueError, match=word):
        check_sync_args(**kw)
