"""No symlog where magnitudes matter (issue 51 item 2): gaps are drawn as their size on a log axis
with the sign marked (plotting.size_bars; the correctors' gap panel draws markers the same way),
and no figure module sets a symlog scale."""
import re
from pathlib import Path

import matplotlib
import pytest

from paper_figs.figures import plotting

matplotlib.use("Agg")
FIGURES = Path(__file__).resolve().parents[2] / "paper_figs" / "figures"


def test_no_figure_draws_a_symlog_axis():
    users = [p.name for p in FIGURES.glob("*.py") if re.search(r"""set_[xy]scale\(\s*["']symlog""", p.read_text())]
    assert not users, users


def test_size_bars_are_the_size_on_a_log_axis_with_the_sign_by_fill():
    fig, (ax,) = plotting.new()
    per_seed = [[0.28, 0.29, 0.27], [-0.006, -0.007, -0.005], [0.004, -0.003, 0.002], [float("nan")]]
    plotting.size_bars(ax, [0, 1, 2, 3], per_seed, 0.5, "tab:red", "gap")
    assert ax.get_yscale() == "log"
    bars = {round(b.get_x() + b.get_width() / 2): b for b in ax.patches}
    assert sorted(bars) == [0, 1, 2]                                   # the missing mean draws nothing
    top = {x: b.get_y() + b.get_height() for x, b in bars.items()}
    assert top[0] == pytest.approx(0.28) and top[1] == pytest.approx(0.006)
    assert bars[1].get_facecolor()[:3] == (1.0, 1.0, 1.0) and bars[1].get_hatch() == "///"   # negative: hollow
    assert bars[0].get_facecolor()[:3] != (1.0, 1.0, 1.0) and not bars[0].get_hatch()
    # the third's interval reaches 0: its lower whisker ends at the floor, never below the log axis
    segs = [s for c in ax.collections for s in c.get_segments()]
    low_ends = [min(s[0][1], s[1][1]) for s in segs]
    assert min(low_ends) == pytest.approx(plotting.SIZE_FLOOR)
    assert all(y >= plotting.SIZE_FLOOR * 0.999 for y in low_ends)
    labels = [h.get_label() for h in plotting.sign_handles()]
    assert any("gap > 0" in x for x in labels) and any("gap < 0" in x for x in labels)
    matplotlib.pyplot.close(fig)
