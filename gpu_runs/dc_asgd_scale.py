"""How large is DC-ASGD's correction on a real run? ``python -m gpu_runs.dc_asgd_scale``.

DC-ASGD (``lmo.delay.dc_correct``) replaces g_t by g~_t = g_t + lambda g_t * g_t * (y_t - x_t).
Whether a lambda does anything depends on the size of that term against the gradient,

    rho(lambda) = ||g~_t - g_t|| / ||g_t|| = lambda ||g_t * g_t * (y_t - x_t)|| / ||g_t||,

which depends on the model, the data and the lr. This trains the one-step-delayed run
(mode 2bw, no correction: what the correction would be applied to) for ``--steps`` steps
and prints rho at each lambda of ``--lambdas`` at the steps of ``--at``, and the lambda
at which rho would be 10 %. Figure 2's sensitivity reading chose its lambda grid from it
(``paper_figs.figures.fig2_table2.sweep_grid``).
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace

from lmo.base import apply_updates
from lmo.clipping import squared_norm
from lmo.delay import dc_correct, virtual_offset

from gpu_runs.cli import add_config_options
from gpu_runs.data import Batcher, get_corpus
from gpu_runs.model import Llama
from gpu_runs.recipe import TrainConfig, bind_data, build_optimizer, loss_and_grads, loss_fn, model_config


def relative_correction(grads: dict, offset: dict, lam: float) -> float:
    """rho = ||dc_correct(g, y - x, lambda) - g|| / ||g|| (module docstring)."""
    corrected = dc_correct(grads, offset, lam)
    diff = {k: corrected[k] - g for k, g in grads.items()}
    return math.sqrt(float(squared_norm(diff)) / float(squared_norm(grads)))


def measure(cfg: TrainConfig, at: list[int], lambdas: list[float], say=print) -> list[dict]:
    """[{step, lambda, rho}] along the 2bw run of ``cfg`` (its mode and dc_asgd are overridden)."""
    cfg = replace(cfg, mode="2bw", ef=False, dc_asgd=0.0, steps=max(cfg.steps, max(at)))
    corpus = get_corpus(cfg.data)
    cfg = bind_data(cfg, corpus)
    model = Llama(model_config(cfg, corpus.vocab_size), seed=cfg.seed)
    params = {k: v.detach().clone() for k, v in model.named_parameters()}
    opt = build_optimizer(cfg, params)[0]
    state = opt.init(params)
    fn, batcher = loss_fn(model), Batcher(corpus.train, cfg.batch_size, cfg.seq_len, cfg.seed)
    rows = []
    for t in range(max(at)):
        _, grads = loss_and_grads(model, params, *batcher.batch(t), False, fn)
        if t + 1 in at:
            off = virtual_offset(state)   # y_t - x_t: what the correction of step t would use
            for lam in lambdas:
                rho = relative_correction(grads, off, lam)
                rows.append(dict(step=t + 1, lam=lam, rho=rho))
                ten = f"{0.1 * lam / rho:.3g}" if rho else "n/a (nothing pending yet)"
                say(f"step {t + 1:6d}  lambda {lam:<10g} rho = {rho:.3e}   (rho = 10 % at lambda ~ {ten})")
        updates, state = opt.update(grads, state, params)
        params = apply_updates(params, updates)
    return rows


#: the run's options (the rest keep TrainConfig's defaults); --steps sets the lr schedule's length
OPTIONS = ("config", "optimizer", "lr", "momentum", "seed", "steps", "batch_size", "seq_len", "data",
           "weight_decay", "grad_clip")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpu_runs.dc_asgd_scale", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    add_config_options(ap, OPTIONS, defaults={"steps": 1500})
    ap.add_argument("--at", default="20,100,200,400", help="comma-separated steps to measure at (default %(default)s)")
    ap.add_argument("--lambdas", default="0.04,100,1000,10000", help="comma-separated lambdas (default %(default)s)")
    args = vars(ap.parse_args(argv))
    try:
        at = sorted({int(s) for s in args.pop("at").split(",")})
        lambdas = [float(s) for s in args.pop("lambdas").split(",")]
        if at[0] < 1 or any(lam <= 0 for lam in lambdas):
            raise ValueError("steps must be >= 1 and lambdas > 0")
        cfg = TrainConfig(**args)
        cfg.validate()
    except ValueError as e:
        ap.error(str(e))
    measure(cfg, at, lambdas)
    return 0


if __name__ == "__main__":
    sys.exit(main())
