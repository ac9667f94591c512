"""Figure 2 + Table 2 at each optimizer's tuned synchronous lr.

Figure 2 trains every optimizer at its preset peak lr (``lmo.presets.DEFAULT_LR``), and for
Adan, NAdam, NorMuon, AdaMuon and Lion those presets are guesses for models 250-1000x
larger. Here every run of the figure (sync, 2BW, sync start, sync cool-down, DC-ASGD,
2BW + EF) trains at the sync lr lr_tuning's grid chose, c_sync(o) x preset
(``paper_figs.tuned_lrs.CHOSEN``): the paper's protocol, one lr for every variant. The
recovered fraction is Figure 2's,

    recovered(k) = (L_2bw - L_k) / (L_2bw - L_sync),

and the claims are Figure 2's, judged by ``fig2_table2.render``.

The lrs were chosen on the tiny model at 1500 steps (``tuned_lrs.CHOSEN_ON``); a profile
whose mitigation model is another size has no tuned lr to train at, and this figure is empty
there. Runs shared: the sync and 2BW runs are lr_tuning's seed-0 grid (it trains both
variants at every multiplier), so seed 0, the seed that chose c_sync, is the one judged here.
"""
from __future__ import annotations

from lmo.variants import SYNC

from ..tuned_lrs import CHOSEN, CHOSEN_ON, chosen
from . import fig2_table2, lr_tuning
from .best_lrs import rests_on
from .common import Context, FigureOutput, at_tuned_lr, grid_figure

NAME = "fig2_tuned"
TITLE = "Figure 2 + Table 2 at each optimizer's tuned sync lr (lr_tuning's choice)"


def grid(p) -> dict:
    """Figure 2's {(optimizer, kind): [settings per seed]}, each optimizer at c_sync x preset,
    spelled as lr_tuning spells a run at a multiple of the preset (its runs shared, same key);
    {} where the profile's mitigation model is not the one the lrs were chosen on."""
    if p.mitigation_size != CHOSEN_ON[1] or p.sizes[0] != CHOSEN_ON[1]:
        return {}
    return {(o, k): [lr_tuning.run_settings(p, o, chosen(o, SYNC), k, s) for s in p.seeds]
            for o in p.mitigation_optimizers if o in CHOSEN for k in fig2_table2.KINDS}


def _render(ctx: Context, out: FigureOutput, g: dict, res: dict) -> FigureOutput:
    if not g:
        out.status = "not run in this profile"
        out.notes.append(f"The tuned lrs were chosen on the {CHOSEN_ON[1]} model, and this profile's "
                         f"mitigation model is {ctx.profile.mitigation_size}.")
        return out
    fig2_table2.render(ctx, out, g, res, "fig2_tuned_mitigations", "at the tuned sync lrs")
    used = [lr_tuning.sync_argmin(ctx, o) for o in res if o in CHOSEN]
    out.verdicts = at_tuned_lr({k: rests_on(v, used) for k, v in out.verdicts.items()})
    out.notes.append("The tuned sync lrs these runs train at (docs/protocol.md §6): " + "; ".join(a.text for a in used)
                     + ".")
    lrs = ", ".join(f"{o} x{chosen(o, SYNC):g}" for o in res if o in CHOSEN)
    out.notes.append(f"Every run at the sync lr chosen by lr_tuning's grid on seed 0 ({lrs} preset; "
                     "paper_figs/tuned_lrs.py); every variant at that lr, as in the paper. The runs are seed 0's, "
                     "the seed whose sync run chose the lr: its sync loss is the minimum of a noisy grid, which "
                     "biases each gap up by at most about one seed SD (lr_tuning's held-out reading measures "
                     "the gap free of that bias for Table 1's headline optimizers).")
    return out


build = grid_figure(NAME, TITLE, grid, _render)
