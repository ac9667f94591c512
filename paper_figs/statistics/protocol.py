"""The verdict protocol, fixed before the records are judged (docs/protocol.md).

Per kind of claim the statistic, the test and the decision rule (``paper_figs.statistics.t_tests``):
Student-t at the estimate's own degrees of freedom (a cell's n - 1, a pool's dof,
Welch-Satterthwaite for combinations), the 95 % interval printed beside every verdict; a
line is decided when its interval lies on one side of the decision boundary. Equivalence
claims are tested against margins computed here from the paper's own numbers. The paper's
claims form the confirmatory family ``FAMILY``, decided at family-wise ``ALPHA`` with Holm;
every other line is exploratory, decided at ``ALPHA`` per line.

Pooling (docs/protocol.md §5), grid edges (§6) and the machine (§7) are rules of this module
too: their constants are here, their code where the data is (``seed_stats.NoiseModel``,
``grid_edges``, ``machine_noise``).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import paper_numbers as pn

ALPHA = 0.05              # family-wise for the confirmatory family (Holm), per line for the others
CONFIDENCE = 0.95         # the interval printed beside every verdict
OWN_SD_MIN_N = 3          # a cell's own SD from this many seeds on (n - 1 dof); below it the cell borrows
HOMOGENEITY_ALPHA = 0.05  # Bartlett's test across the optimizer's cells: the pooling criterion

#: "most modern optimizers stay within 0.03" relative to the largest sync loss of the summary's
#: dense table (Adan 135M, 2.896): the strictest relative reading of 0.03
M_BENIGN = pn.MOST_WITHIN.value / max(v["sync"].value for k, v in pn.LOSSES.items() if k[1] != "10B MoE")
#: the smallest gap the paper reports as a gap: 10B MoE async 1.911 - sync 1.906, relative to sync
_MOE = pn.LOSSES["muon_moe", "10B MoE"]
M_SMALLEST = (_MOE["2bw"].value - _MOE["sync"].value) / _MOE["sync"].value

RECOVERY_LOW = 0.5        # "EF recovers 50-90 %": at least the range's low end
MUCH_LARGER = 3.0         # exploratory "much larger": at least 3x
MONOTONE_SPEARMAN = -0.8  # "momentum shrinks the gap" also needs a monotone trend
SPIKE_REL = 0.10          # a delayed validation loss this far above its running minimum: divergence
MISSING_WEIGHT_MAX = 0.01  # theory_training: a record at step t is excluded when beta^t exceeds this

#: the live-vs-kept tolerance of a regime: this many times the largest |here - kept| measured there
TOLERANCE_FACTOR = 2.0
TOLERANCE_UNMEASURED = 0.01  # where the regime's spread is not measured

CONFIRMATORY, EXPLORATORY = "confirmatory", "exploratory"


@dataclass(frozen=True)
class Claim:
    """One line of the confirmatory family: its id, the figure that computes it, the paper's
    claim and number (``paper_numbers``), the reading tested and the test."""

    id: str
    figure: str
    paper: str
    paper_number: str
    reading: str
    test: str


def _gap(o: str, size: str) -> str:
    return f"{pn.GAPS[o][size].value:.3f}"


FAMILY: tuple[Claim, ...] = (
    Claim("C1", "fig3", "AdamW degrades much more than Muon (Table 1, Figure 3)",
          f"gap {_gap('adamw', '360M')} vs {_gap('muon', '360M')} (360M), {_gap('adamw', '135M')} vs "
          f"{_gap('muon', '135M')} (135M)",
          "AdamW's sync-async gap larger than Muon's (main model, Figure 3's cells)", "superiority"),
    Claim("C2", "table1", "MARS degrades much more than Muon (Table 1)",
          f"gap {_gap('mars', '360M')} vs {_gap('muon', '360M')} (360M), {_gap('mars', '135M')} vs "
          f"{_gap('muon', '135M')} (135M)",
          "MARS's gap larger than Muon's (main model)", "superiority"),
    Claim("C3", "table1", "most modern optimizers stay within a gap of 0.03 (results)",
          f"within {pn.MOST_WITHIN.value:g}",
          f"most of Table 1's optimizers: relative gap below M_BENIGN = {M_BENIGN:.2%} of the sync loss "
          "(main model)", "non-inferiority, most parts"),
    Claim("C4", "table1", "Adan is among the most robust optimizers (results)",
          f"gap {_gap('adan', '135M')} vs Muon's {_gap('muon', '135M')} (135M)",
          "Adan's gap smaller than Muon's (main model, preset lrs)", "superiority"),
    Claim("C5", "fig3", "EF recovers 50-90 % of the gap (AdamW 90 %, Muon 71 %)",
          f"{pn.EF_RECOVERY['adamw'].value:.0%} (AdamW), {pn.EF_RECOVERY['muon'].value:.0%} stated / 58 % from "
          "the losses (Muon), 360M",
          "EF recovers >= 50 % of the gap, AdamW and Muon (Figure 3's cells)", "superiority, every part"),
    Claim("C6", "fig2_table2", "for most optimizers EF recovers more than half the gap and beats synchronous "
          "start (Figure 2 caption)", "not given in the summary",
          "per optimizer EF recovers >= 50 % and is below sync start; most optimizers", "superiority, most parts"),
    Claim("C7", "fig2_table2", "EF slightly hurts Adan and NAdam (results, limitations)", "not given in the summary",
          "async + EF's final loss above async's, Adan and NAdam", "superiority, every part"),
    Claim("C8", "fig2_table2", "sync start, sync cool-down and DC-ASGD have limited or inconsistent effect "
          "(Figure 2)", "not given in the summary",
          "for each mitigation: not (most optimizers recover >= 50 %)", "every part of not-most"),
    Claim("C9", "fig4", "higher momentum consistently reduces the one-step-delay penalty (Figure 4)",
          "not given in the summary",
          "gap at the largest momentum below the smallest's, monotone, sync loss not moving; preset lr, every "
          "optimizer", "superiority, every part"),
    Claim("C10", "fig5", "the gap does not grow with longer training (Figure 5)",
          "not given (2B MoE: curves parallel from 50B to 200B tokens)",
          f"growth of the gap from the shortest to the longest horizon below M_SMALLEST = {M_SMALLEST:.2%} of the "
          "sync loss, AdamW and Muon (dense)", "non-inferiority, every part"),
    Claim("C11", "fig5", "EF consistently reduces the remaining gap (Figure 5)", "not given in the summary",
          "async + EF's final loss below async's at every horizon, AdamW and Muon", "superiority, every part"),
    Claim("C12", "fig6", "the constant delay of PipeDream-2BW is more stable than PipeDream's variable delay "
          "(Figure 6)", "not given in the summary",
          "2BW's final loss below PipeDream's, every optimizer", "superiority, every part"),
    Claim("C13", "moe", "10B MoE: EF closes the gap entirely (Table 3)",
          f"sync {_MOE['sync'].value:.3f}, async {_MOE['2bw'].value:.3f}, async + EF {_MOE['ef'].value:.3f}",
          f"|L_ef - L_sync| below M_SMALLEST = {M_SMALLEST:.2%} of the sync loss (MoE model)", "equivalence (TOST)"),
    Claim("C14", "moe", "10B MoE: both asynchronous runs remain stable throughout training (Figure 1)",
          f"stable; gap {_MOE['2bw'].value - _MOE['sync'].value:.3f}",
          f"no delayed run diverges and the async gap is below M_BENIGN = {M_BENIGN:.2%} of the sync loss, every "
          "horizon (MoE model)", "non-inferiority, every part"),
    Claim("C15", "moe", "the gap does not grow with longer training, on the paper's model kind (Figure 5, 2B MoE)",
          "not given (curves parallel from 50B to 200B tokens)",
          f"growth of the MoE gap from the shortest to the longest horizon below M_SMALLEST = {M_SMALLEST:.2%} of "
          "the sync loss", "non-inferiority"),
)
CLAIMS_BY_ID = {c.id: c for c in FAMILY}
