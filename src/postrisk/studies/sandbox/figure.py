"""The 1-D sandbox's figure: the environment, the five Bayes-optimal scorers, the inputs each
rejects at the coverage, and where each accepted set lies against Theorem 1's oracle front.

Four panels: (a) f*, the training sample, the exact posterior mean ± 2 SD and the noise SD;
(b) each scorer scaled to [0, 1] over the grid (its ranking is what matters); (c) the rejected
intervals, one row per scorer; (d) risk against regret at the coverage: the oracle front traced
by thresholding (1 − λ) A* + λ E* for λ ∈ [½, 1], and each scorer's accepted set.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from postrisk.evaluation.oracle_selection import FINE_LAMBDAS, lambda_grid, oracle_surface
from postrisk.report.figures import OKABE_ITO, TICK_SIZE, _figure, save_png_pdf
from postrisk.studies.sandbox.model import SCORERS, Sandbox

#: One colour per scorer, in :data:`SCORERS` order.
COLOURS = dict(zip(SCORERS, OKABE_ITO, strict=False))


def _environment(ax, sandbox: Sandbox) -> None:
    sd = np.sqrt(sandbox.posterior_var)
    x, mean = sandbox.grid, sandbox.posterior_mean
    ax.fill_between(x, mean - 2 * sd, mean + 2 * sd, color=OKABE_ITO[4], alpha=0.35, lw=0,
                    label="posterior mean ± 2 SD")
    ax.plot(x, mean, color=OKABE_ITO[0], lw=1.0)
    ax.plot(x, sandbox.f_star, color="black", lw=1.0, label="f*")
    ax.scatter(sandbox.x_train, sandbox.y_train, s=4, color="0.45", lw=0,
               label=f"training sample (n = {sandbox.x_train.size})")
    twin = ax.twinx()
    twin.plot(x, np.sqrt(sandbox.noise_var), color=OKABE_ITO[5], lw=1.0, ls="--")
    twin.plot(x, sandbox.p_id / sandbox.p_id.max(), color=OKABE_ITO[2], lw=1.0, ls=":")
    twin.set_ylabel("noise SD σ(x) (dashed); p_id / max (dotted)", fontsize=TICK_SIZE)
    twin.tick_params(labelsize=TICK_SIZE)
    ax.set_title("(a) f*, the sample and the exact posterior", fontsize=10)
    ax.legend(fontsize=7, loc="lower right")


def _scorers(ax, sandbox: Sandbox) -> None:
    for name, score in sandbox.scores().items():
        span = score.max() - score.min()
        ax.plot(sandbox.grid, (score - score.min()) / span if span > 0 else score * 0,
                color=COLOURS[name], lw=1.1, label=SCORERS[name])
    ax.set_ylabel("score, scaled to [0, 1]", fontsize=TICK_SIZE)
    ax.set_title("(b) the Bayes-optimal scorers", fontsize=10)
    ax.legend(fontsize=7, loc="upper right")


def _rejections(ax, intervals: pd.DataFrame, coverage: float) -> None:
    names = list(SCORERS)
    for row, name in enumerate(names):
        spans = intervals[intervals["scorer"] == name]
        ax.broken_barh([(s, max(e - s, 2e-3)) for s, e in zip(spans["start"], spans["end"],
                                                             strict=True)],
                       (row - 0.35, 0.7), color=COLOURS[name])
    ax.set_yticks(range(len(names)), [SCORERS[n] for n in names], fontsize=TICK_SIZE)
    ax.invert_yaxis()
    ax.set_xlabel("x", fontsize=TICK_SIZE)
    ax.set_title(f"(c) rejected at {coverage:.0%} coverage", fontsize=10)


def _front(ax, sandbox: Sandbox, scorers: pd.DataFrame) -> None:
    squared = sandbox.uncertainty("squared")
    coverage = sandbox.settings.coverage
    front = oracle_surface(squared["aleatoric"], squared["epistemic"], sandbox.weights,
                           lambda_grid(FINE_LAMBDAS), [coverage])
    ax.plot(front["risk"], front["regret"], color="black", lw=1.2,
            label="oracle: (1 − λ)A* + λE*, λ ∈ [½, 1]")
    for _, row in scorers.iterrows():
        ax.scatter(row["risk"], row["regret"], color=COLOURS[row["scorer"]], s=36, zorder=3,
                   edgecolor="black", lw=0.5, label=row["name"])
    ax.set_xlabel(f"risk Ri = E[C·T*] at {coverage:.0%} coverage", fontsize=TICK_SIZE)
    ax.set_ylabel("regret Re = E[C·E*]", fontsize=TICK_SIZE)
    ax.set_title("(d) the accepted sets against the oracle front", fontsize=10)
    ax.legend(fontsize=7)


def draw_sandbox(sandbox: Sandbox, tables: Mapping[str, pd.DataFrame]):
    """The four-panel figure (see the module docstring)."""
    fig, axes = _figure(11.0, 7.5, ncols=2, nrows=2)
    _environment(axes[0, 0], sandbox)
    _scorers(axes[0, 1], sandbox)
    _rejections(axes[1, 0], tables["sandbox_intervals"], sandbox.settings.coverage)
    _front(axes[1, 1], sandbox, tables["sandbox_scorers"])
    for ax in axes.flat:
        ax.tick_params(labelsize=TICK_SIZE)
    for ax in (axes[0, 0], axes[0, 1], axes[1, 0]):
        ax.set_xlim(*sandbox.settings.domain)
    return fig


def figure_sandbox(sandbox: Sandbox, tables: Mapping[str, pd.DataFrame], scale: str,
                   stem: str | Path) -> list[Path]:
    """Write the figure as ``<stem>.png`` and ``<stem>.pdf``."""
    return save_png_pdf(draw_sandbox(sandbox, tables), stem, scale)
