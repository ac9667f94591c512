"""Power and seed counts, one computation for every caller (issue 47 item 5):
``paper_figs.seeds_needed`` (80 % power per claim), ``seed_stats.seeds_to_resolve`` (the seeds an
inconclusive line's estimate would need, if it held) and the simulation of ``paper_figs.error_rates``,
which checks them.

A statistic with estimate at distance ``delta`` from its decision boundary (on the side the
target needs) and standard error SE_now from n_now seeds per cell has at n seeds per cell

    SE_n = SE_now (n_now / n)^(1/2)
    power(n) = P(T > t_{1 - level/2, nu(n)}),   T ~ noncentral t(nu(n), delta / SE_n)

(the exact power of the one-sided decision of a two-sided t test; SE_n is the true standard
error, the test divides by an SD estimated with nu(n) degrees of freedom).

The degrees of freedom follow the protocol (docs/protocol.md §2): at today's n they are the
estimate's own ``dof`` (a cell's n - 1, or the pool's when it borrows, or Welch-Satterthwaite's);
at n >= OWN_SD_MIN_N a cell has its own SD: nu(n) = dof_now (n - 1) / (n_now - 1) where today's
estimate already rests on own SDs (n_now >= OWN_SD_MIN_N: Welch-Satterthwaite's dof over cells
whose spreads keep their ratio scale with n - 1; a single cell's n_now - 1 gives n - 1), else
n - 1 (the least Welch allows: an estimate that borrows today has no spread ratio to scale);
below OWN_SD_MIN_N it keeps borrowing at the estimate's dof. A count computed at today's dof is therefore neither a lower nor an upper bound
once n crosses OWN_SD_MIN_N; :func:`seeds_to_clear` counts with nu(n) for each n instead.
"""
from __future__ import annotations

import math

from .protocol import OWN_SD_MIN_N
from scipy import stats

from .t_tests import t_quantile


def dof_at(n: int, n_now: int, dof_now: float) -> float:
    """nu(n): today's dof at today's n; from OWN_SD_MIN_N seeds on dof_now (n - 1) / (n_now - 1)
    where today's estimate has own SDs (n_now >= OWN_SD_MIN_N), else n - 1; below, today's dof.

    >>> dof_at(4, 4, 3.0), dof_at(6, 1, 40.0), dof_at(2, 1, 40.0), dof_at(7, 4, 4.5)
    (3.0, 5, 40.0, 9.0)
    """
    if n == n_now:
        return dof_now
    if n < OWN_SD_MIN_N:
        return dof_now
    return dof_now * (n - 1) / (n_now - 1) if n_now >= OWN_SD_MIN_N else n - 1


def leaf_power(delta: float, se_now: float, n_now: int, n: int, dof_now: float, level: float) -> float:
    """P(a two-sided t test at ``level`` decides the side ``delta`` points to) at n seeds per cell.

    >>> round(leaf_power(1.0, 0.5, 4, 4, 3.0, 0.05), 3)   # noncentrality 2 at 3 dof, t_crit 3.18
    0.289
    """
    if not (math.isfinite(delta) and math.isfinite(se_now)) or se_now <= 0 or n < 1 or n_now < 1:
        return 0.0
    nu = dof_at(n, n_now, dof_now)
    if not nu > 0:
        return 0.0
    se = se_now * math.sqrt(n_now / n)
    return float(stats.nct.sf(t_quantile(1 - level / 2, nu), nu, delta / se))


def seeds_to_clear(delta: float, se_now: float, n_now: int, dof_now: float, level: float = 0.05,
                   max_n: int = 10_000) -> int | None:
    """The smallest n >= n_now at which the estimate, if it held, would clear its critical value:
    |delta| / SE_n >= t_{1 - level/2, nu(n)} (None: not within ``max_n``, or no information).

    >>> seeds_to_clear(0.5, 0.5, 4, 3.0)    # t = (n / 4)^(1/2) >= t_{0.975, n - 1}: 2.12 >= 2.11 at n = 18
    18
    """
    if not (math.isfinite(delta) and math.isfinite(se_now)) or se_now <= 0 or delta == 0 or n_now < 1:
        return None
    for n in range(n_now, max_n + 1):
        nu = dof_at(n, n_now, dof_now)
        if nu > 0 and abs(delta) / (se_now * math.sqrt(n_now / n)) >= t_quantile(1 - level / 2, nu):
            return n
    return None
