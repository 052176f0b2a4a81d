"""The rank histograms of the checks: one panel per prior, their shared legend outside every
axes (below the panels), so no bar is hidden; a prior without valid instances says so."""

import matplotlib.pyplot as plt
import numpy as np

from postrisk.report.checks import draw_rank_histograms
from postrisk.report.style import save_figure
from postrisk.tasks.diagnostics import rank_bin_probabilities, rank_histogram


def _points(priors, n_draws=200, n=400):
    rng = np.random.default_rng(0)
    return {p: {"rank_hist": rank_histogram(rng.integers(0, n_draws + 1, n), n_draws),
                "rank_expected": rank_bin_probabilities(n_draws), "mcse_var": np.zeros(n)}
            for p in priors}


def _legend_clear_of_the_axes(fig) -> None:
    fig.canvas.draw()
    assert len(fig.legends) == 1 and not any(ax.get_legend() for ax in fig.axes)
    legend = fig.legends[0].get_window_extent()
    for ax in fig.axes:
        assert not legend.overlaps(ax.get_window_extent()), ax.get_title()
        assert not legend.overlaps(ax.get_tightbbox()), ax.get_title()  # nor labels or title
    assert legend.y1 < min(ax.get_window_extent().y0 for ax in fig.axes)  # below the panels
    assert {t.get_text() for t in fig.legends[0].get_texts()} == {
        "95% band, uniform", "observed", "expected"}


def test_the_legend_is_below_the_panels_and_covers_no_bar():
    priors = ["gp", "bnn", "hbart"]
    points = _points(priors)
    fig = draw_rank_histograms(points, priors, dict.fromkeys(priors, 4),
                               dict.fromkeys(priors, 400))
    fig.suptitle("demo scale — not comparable to the paper")  # as save_figure adds it
    _legend_clear_of_the_axes(fig)
    plt.close(fig)


def test_saving_keeps_a_figures_own_layout(tmp_path, monkeypatch):
    fig, _ = plt.subplots(figsize=(2, 1.5), layout="constrained")
    monkeypatch.setattr(fig, "tight_layout", lambda: (_ for _ in ()).throw(AssertionError))
    save_figure(fig, tmp_path / "f.png", "demo")
    assert (tmp_path / "f.png").exists() and (tmp_path / "f.pdf").exists()
    assert not plt.get_fignums()


def test_one_prior_per_figure_and_a_prior_without_instances():
    points = _points(["gp"])
    fig = draw_rank_histograms(points, ["gp"], {"gp": 4}, {"gp": 400})
    _legend_clear_of_the_axes(fig)
    plt.close(fig)
    fig = draw_rank_histograms(points, ["bnn"], {"gp": 4}, {"gp": 400})
    assert not fig.legends and "BNN: no valid instance" in fig.axes[0].texts[0].get_text()
    plt.close(fig)
