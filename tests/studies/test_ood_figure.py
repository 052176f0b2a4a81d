"""The OOD study's figure (postrisk.studies.ood_proxy.figure, paper Figure 3B): both files written,
scorers in the table's order, each method's AUROC and interval drawn where it is, the paper's
values as hollow markers, "n/a" where a value is missing, an empty table drawn as a message."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.container import ErrorbarContainer

from postrisk.studies.ood_proxy import figure as O

NAN = float("nan")
NAMES = ["GP", "NN-Ens", "BLR", "Mahalanobis", "10-NN", "supervised_classifier"]
#: method -> (all, matched, paper all, paper matched); blr has no matched value, nn_ens no
#: paper values.
VALUES = {"gp": (0.9, 0.62, 0.88, 0.6), "nn_ens": (0.8, 0.55, None, None),
          "blr": (0.7, NAN, 0.72, 0.51), "mahalanobis": (0.85, 0.5, 0.86, 0.5),
          "knn10": (0.83, 0.49, 0.84, 0.5), "classifier": (0.95, 0.7, NAN, NAN)}


def _table11() -> pd.DataFrame:
    rows = []
    for (method, (a, m, pa, pm)), name in zip(VALUES.items(), NAMES, strict=True):
        rows.append({"kind": "reference" if method in ("mahalanobis", "knn10", "classifier")
                     else "method", "method": method, "display_name": name, "n_instances": 4,
                     "auroc_all": a, "auroc_all_ci_low": a - 0.05, "auroc_all_ci_high": a + 0.03,
                     "auroc_matched": m, "auroc_matched_ci_low": m - 0.1,
                     "auroc_matched_ci_high": m + 0.08, "paper_auroc_all": pa,
                     "paper_auroc_matched": pm})
    return pd.DataFrame(rows)


@pytest.fixture
def fig():
    figure = O.draw_ood_auroc(_table11())
    yield figure
    plt.close(figure)


def _check_files(paths, stem) -> None:
    assert [p.name for p in paths] == [stem.name + ".png", stem.name + ".pdf"]
    for path in paths:
        assert path.exists() and path.stat().st_size > 1024
    assert paths[0].read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert paths[1].read_bytes().startswith(b"%PDF")


def _rows(ax) -> dict[str, float]:
    """display name -> row position on the shared y axis."""
    return {t.get_text(): y for t, y in zip(ax.get_yticklabels(), ax.get_yticks(), strict=True)}


def _points(ax) -> dict[float, tuple[float, tuple[float, float] | None]]:
    """row position -> (x of the drawn point, x extent of its error bar or None)."""
    out = {}
    for container in ax.containers:
        assert isinstance(container, ErrorbarContainer)
        line, _caps, bars = container.lines
        (x,), (y,) = line.get_xdata(), line.get_ydata()
        bar = None
        if bars:
            (segment,) = bars[0].get_segments()
            bar = (float(segment[:, 0].min()), float(segment[:, 0].max()))
        out[float(y)] = (float(x), bar)
    return out


def _hollow(ax) -> dict[float, float]:
    """row position -> x of the hollow (paper) marker."""
    return {float(line.get_ydata()[0]): float(line.get_xdata()[0]) for line in ax.lines
            if line.get_marker() == "D" and line.get_markerfacecolor() == "none"}


def test_rows_in_the_tables_order(fig):
    left, right = fig.axes[:2]
    assert [t.get_text() for t in left.get_yticklabels()] == NAMES
    assert list(right.get_yticks()) == list(left.get_yticks())  # shared axis
    rows = _rows(left)
    ys = [rows[n] for n in NAMES]
    assert ys == sorted(ys) and left.get_ylim()[0] > left.get_ylim()[1]  # first on top
    assert rows["Mahalanobis"] - rows["BLR"] > 1.0  # a gap before the references
    assert [left.get_title(), right.get_title()] == list(O.PANELS.values())
    colours = [t.get_color() for t in left.get_yticklabels()]
    assert colours[3:] == [O.REFERENCE_COLOUR] * 3 and O.REFERENCE_COLOUR not in colours[:3]


@pytest.mark.parametrize("panel, version", [(0, "all"), (1, "matched")])
def test_each_panel_draws_the_values_where_they_are(fig, panel, version):
    ax = fig.axes[panel]
    rows = _rows(fig.axes[0])
    points, hollow = _points(ax), _hollow(ax)
    table = _table11().set_index("display_name")
    finite = 0
    for name in NAMES:
        row, y = table.loc[name], rows[name]
        value = row[f"auroc_{version}"]
        if np.isnan(value):
            assert y not in points
        else:
            x, bar = points[y]
            assert x == pytest.approx(value)
            assert bar == pytest.approx((row[f"auroc_{version}_ci_low"],
                                         row[f"auroc_{version}_ci_high"]))
            finite += 1
        paper = pd.to_numeric(row[f"paper_auroc_{version}"])
        if np.isfinite(paper):
            assert hollow[y] == pytest.approx(paper)
        else:
            assert y not in hollow
    assert len(points) == finite == (6 if version == "all" else 5)
    na = [t for t in ax.texts if t.get_text() == "n/a"]
    assert len(na) == 6 - finite
    if na:
        assert na[0].get_position()[1] == rows["BLR"]
    chance = [line for line in ax.lines if line.get_linestyle() == "--"
              and list(line.get_xdata()) == [O.CHANCE, O.CHANCE]]
    assert len(chance) == 1
    assert ax.get_xlim() == pytest.approx(O.X_LIMITS)
    assert "mean over 4 instances" in ax.get_xlabel()


def test_method_and_reference_colours(fig):
    rows = _rows(fig.axes[0])
    for panel, colour in enumerate(O.OKABE_ITO[:2]):
        by_row = {float(c.lines[0].get_ydata()[0]): c.lines[0].get_color()
                  for c in fig.axes[panel].containers}
        for name in NAMES:
            if rows[name] in by_row:
                expected = colour if name in NAMES[:3] else O.REFERENCE_COLOUR
                assert by_row[rows[name]] == expected


def test_legend_below_the_panels(fig):
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [O.CHANCE_LABEL, O.PAPER_LABEL]
    fig.canvas.draw()
    legend_top = legend.get_window_extent().y1
    assert all(legend_top <= ax.get_window_extent().y0 for ax in fig.axes[:2])


def test_no_paper_entry_without_paper_values():
    table = _table11().assign(paper_auroc_all=None, paper_auroc_matched=NAN)
    figure = O.draw_ood_auroc(table)
    try:
        (legend,) = figure.legends
        assert [t.get_text() for t in legend.get_texts()] == [O.CHANCE_LABEL]
        assert not any(_hollow(ax) for ax in figure.axes)
    finally:
        plt.close(figure)


def test_low_values_widen_the_axis():
    table = _table11()
    table.loc[0, "auroc_matched_ci_low"] = 0.2
    figure = O.draw_ood_auroc(table)
    try:
        lo, hi = figure.axes[1].get_xlim()
        assert lo < 0.2 and hi == pytest.approx(O.X_LIMITS[1])
    finally:
        plt.close(figure)


def test_figure_writes_both_files(tmp_path):
    stem = tmp_path / "figures" / "fig3b_ood_auroc"
    _check_files(O.figure_ood_auroc(_table11(), "demo", stem), stem)
    other = tmp_path / "builder"
    _check_files(O.ood_auroc_figure({"table11": _table11()}, "paper", other), other)


def test_empty_table_still_writes_a_figure(tmp_path):
    empty = _table11().iloc[:0]
    figure = O.draw_ood_auroc(empty)
    assert [t.get_text() for t in figure.axes[0].texts] == [O.EMPTY_MESSAGE]
    plt.close(figure)
    stem = tmp_path / "fig3b_ood_auroc"
    _check_files(O.figure_ood_auroc(empty, "demo", stem), stem)
    _check_files(O.figure_ood_auroc(pd.DataFrame(), "paper", stem), stem)
