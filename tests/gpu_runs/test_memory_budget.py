"""A run states its memory cost before it allocates and refuses, in one line naming the
option, one that cannot fit the machine or whose tau is at least its steps (issue 50)."""
import pytest

from gpu_runs import memory_budget as mb
from gpu_runs.recipe import TrainConfig, model_config
from gpu_runs.train import main

GiB = 1 << 30
ARGV = ["--optimizer", "muon", "--delay", "2bw", "--batch-size", "2", "--seq-len", "16", "--eval-batches", "1"]


def _cost(**kw):
    base = dict(params=10, grads=10, opt_state=20, delay_queue=0, activations=5)
    return mb.MemoryCost(**{**base, **kw})


def test_fits_is_a_pure_function_of_sizes_and_available_memory():
    c = _cost()
    assert c.total == 45
    mb.check_fits(c, 45)                # exactly fits
    mb.check_fits(c, None)              # unknown: nothing refused
    with pytest.raises(mb.DoesNotFit, match="lower --config"):
        mb.check_fits(c, 44)


@pytest.mark.parametrize("term, option", [("delay_queue", "--tau"), ("activations", "--batch-size / --seq-len"),
                                          ("opt_state", "--config")])
def test_the_refusal_names_the_option_of_the_largest_term(term, option):
    c = _cost(**{term: 10 ** 12}, tau=7)
    with pytest.raises(mb.DoesNotFit) as e:
        mb.check_fits(c, 10 ** 9)
    msg = str(e.value)
    assert f"lower {option} " in msg and "\n" not in msg and "nothing was allocated" in msg


def test_available_is_the_smallest_known_limit():
    text = "MemTotal: 100 kB\nMemAvailable:   2048 kB\n"
    assert mb.parse_meminfo(text) == 2048 * 1024
    assert mb.available_bytes(8 * GiB, None) == 8 * GiB
    assert mb.available_bytes(8 * GiB, 6 * GiB, mapped=1 * GiB) == 5 * GiB     # ulimit -v less what is mapped
    assert mb.available_bytes(8 * GiB, None, device_free=2 * GiB) == 2 * GiB
    assert mb.available_bytes(None, None) is None


def test_the_delay_queue_is_tau_copies_of_the_parameters_measured_or_counted(monkeypatch):
    cfg = TrainConfig(optimizer="muon", mode="2bw", tau=3, steps=10)
    mcfg = model_config(cfg, 256)
    measured = mb.run_cost(cfg, mcfg)
    assert measured.delay_queue == 3 * measured.params
    monkeypatch.setattr(mb, "QUEUE_MEASURED_UP_TO", 0)     # the counted path agrees with the measured one
    counted = mb.run_cost(cfg, mcfg)
    assert counted.delay_queue == measured.delay_queue
    assert abs(counted.opt_state - measured.opt_state) <= 64      # the wrapper's step counter
    sync = mb.run_cost(TrainConfig(optimizer="muon", steps=10), mcfg)
    assert sync.delay_queue == 0 and sync.params == measured.params


def test_a_huge_tau_is_refused_before_anything_is_allocated(tmp_path, capsys, monkeypatch):
    import gpu_runs.train as train_mod
    monkeypatch.setattr(train_mod, "Llama", lambda *a, **k: pytest.fail("the model was built before the check"))
    out = tmp_path / "run"
    assert main([*ARGV, "--tau", "100000", "--steps", "200000", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "delay queue (tau 100000)" in err and "lower --tau" in err
    assert not out.exists()                                 # the refusal left nothing behind


def test_tau_at_least_steps_is_refused_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main([*ARGV, "--tau", "8", "--steps", "4", "--out", str(tmp_path / "run")])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--tau" in err and "--steps" in err
    assert not (tmp_path / "run").exists()
