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
    fig, (a, _) = _fig(ncols=2)
    a.set_title("gap" + plotting.seeds_note(3))
    fig.tight_layout()
    assert plotting.layout_defects(fig) == []


def test_a_figure_of_runs_that_does_not_say_its_whiskers_is_found():
    """Issue 51 item 2: a plot of training runs says what its whiskers are (95 % t or Fieller),
    or that its points are one seed; a theory curve (``over_seeds=False``) need not."""
    fig, (ax,) = _fig()
    ax.set_title("gap vs momentum")
    fig.tight_layout()
    assert any("whiskers" in d for d in plotting.layout_defects(fig))
    assert plotting.layout_defects(fig, over_seeds=False) == []
    for n in (1, 4):
        ax.set_title("gap vs momentum" + plotting.seeds_note(n))
        plotting.wrap_titles(fig)
        fig.tight_layout()
        assert plotting.layout_defects(fig) == []


def test_the_seed_note_says_what_the_points_are():
    assert "one seed" in plotting.seeds_span_note([[0.1], [0.2, None]])
    assert "4 seeds per point" in plotting.seeds_span_note([[0.1] * 4, [0.2] * 4])
    mixed = plotting.seeds_span_note([[0.1], [0.2, 0.3, 0.4]])
    assert "1-3 seeds" in mixed and "none for one seed" in mixed


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
