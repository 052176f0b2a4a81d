"""What every figure and table of a run shares: the note on runs below the paper's scale and
how a cell prints (the display names of methods and reference rows: the method table's)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from postrisk.grid.artefacts import figure_files

DEMO_NOTE = "{scale} scale — not comparable to the paper"


def format_value(value: object) -> str:
    """A table cell as text: ``None`` and NaN as "n/a", floats with 3 decimals (4 significant
    digits from 10⁴ on), integers and booleans as written."""
    if value is None:
        return "n/a"
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        v = float(value)
        if v != v:
            return "n/a"
        return f"{v:.3f}" if abs(v) < 1e4 else f"{v:.4g}"
    return str(value)


def scale_note(scale: str) -> str:
    return "" if scale == "paper" else DEMO_NOTE.format(scale=scale)


def write_scaled_tables(tables: Mapping[str, pd.DataFrame], out: Mapping[str, str | Path],
                        scale: str) -> None:
    """Write each table (catalogue id → frame) to its path in ``out`` as CSV, the run's scale
    inserted as its first column (in place: the frames keep it)."""
    for ident, frame in tables.items():
        path = Path(out[ident])
        path.parent.mkdir(parents=True, exist_ok=True)
        frame.insert(0, "scale", scale)
        frame.to_csv(path, index=False)


def save_figure(fig, path, scale: str) -> None:
    """Save ``fig`` as ``path`` (PNG) and as a PDF beside it, with the scale note on top (laid
    out tight unless the figure has a layout engine, e.g. constrained)."""
    note = scale_note(scale)
    if note:
        fig.suptitle(note, fontsize=9, color="tab:red")
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    png, pdf = figure_files(str(path))
    fig.savefig(png, dpi=120)
    fig.savefig(pdf)
    plt.close(fig)
