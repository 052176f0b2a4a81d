"""Does the method ranking hinge on the noise design? Two demo runs, old and new design, side by
side with the paper.

    python benchmarks/noise_ranking.py OLD_RESULTS NEW_RESULTS [--markdown FILE]

Both folders are ``results/`` trees of the same preset that differ in the noise design (e.g.
``noise_model.strength``). Printed, as Markdown:

1. the paper's Figure 2 order — the methods by their mean ρ(ÊU, posterior excess risk)
   (``tables/scores.csv``, target ``eu_posterior_excess_risk``) — in each run, with each
   method's place and Kendall's τ between the two orders (``scipy.stats.kendalltau`` of the
   means over the methods both runs scored; the ablations and reference rows left out, as in
   the figure), and the paper's best and worst methods beside them;
2. Tables 8–10: per method Δ_ent and the truth's ρ(EU*, σ²_ε) in each run, the paper's beside;
3. the truth's own coupling ρ(σ²_f, σ²_ε) (``tables/noise_shape.csv``) in each run, the
   paper's beside.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from postrisk.evaluation.paper import paper_numbers
from postrisk.methods.registry import display_name
from postrisk.methods.table import ABLATION_TABLE
from postrisk.report.tables import markdown_table

TARGET = "eu_posterior_excess_risk"
TABLES = {"table8": "posterior excess risk", "table9": "posterior variance",
          "table10": "point-wise excess risk"}


def figure2_means(results: Path) -> pd.Series:
    """Method → mean ρ(ÊU, posterior excess risk), the methods only (no reference rows, no
    ablations), highest first."""
    scores = pd.read_csv(results / "tables" / "scores.csv")
    rows = scores[(scores["kind"] == "method") & (scores["target"] == TARGET)
                  & ~scores["method"].isin([a.name for a in ABLATION_TABLE])]
    return rows.set_index("method")["mean"].dropna().sort_values(ascending=False)


def order_agreement(old: pd.Series, new: pd.Series) -> tuple[float, int]:
    """Kendall's τ between two methods → score series over the methods both have, and how
    many that is."""
    common = old.index.intersection(new.index)
    return float(kendalltau(old[common], new[common]).statistic), len(common)


def _markdown(rows: list[list[object]], header: list[str]) -> str:
    return markdown_table(pd.DataFrame(rows, columns=header))


def order_section(old: Path, new: Path) -> str:
    a, b = figure2_means(old), figure2_means(new)
    tau, n = order_agreement(a, b)
    place_a = {m: i + 1 for i, m in enumerate(a.index)}
    names = pd.read_csv(new / "tables" / "scores.csv").set_index("method")["display_name"]
    names = names[~names.index.duplicated()]
    rows = [[i + 1, names.get(m, display_name(m)), b[m], place_a.get(m), a.get(m, np.nan)]
            for i, m in enumerate(b.index)]
    numbers = paper_numbers()
    best = numbers.loc[(numbers["source"] == "text") & (numbers["quantity"] == "best_methods"),
                       "group"]
    worst = numbers.loc[(numbers["source"] == "text")
                        & (numbers["quantity"] == "worst_methods"), "group"]
    paper = []
    if len(best):
        paper.append("best " + best.iloc[0].replace(";", ", "))
    if len(worst):
        paper.append("worst " + worst.iloc[0].replace(";", ", "))
    return ("Figure 2's order, ρ(ÊU, posterior excess risk) (new run; old run's place and ρ "
            f"beside)\n\n{_markdown(rows, ['new place', 'method', 'new ρ', 'old place', 'old ρ'])}"
            f"\n\nKendall's τ between the two orders: {tau:.3f} over {n} methods"
            + (f"; the paper: {'; '.join(paper)}" if paper else ""))


def entanglement_section(old: Path, new: Path) -> str:
    parts = []
    for table, label in TABLES.items():
        a = pd.read_csv(old / "tables" / f"{table}.csv").set_index("method")
        b = pd.read_csv(new / "tables" / f"{table}.csv").set_index("method")
        rows = [[b.loc[m, "display_name"],
                 a["delta_ent"].get(m, np.nan), b.loc[m, "delta_ent"], b.loc[m, "paper_delta_ent"],
                 a["rho_eu_au_true"].get(m, np.nan), b.loc[m, "rho_eu_au_true"],
                 b.loc[m, "paper_rho_eu_au_true"]]
                for m in b.sort_values("delta_ent").index]
        parts.append(f"{table} (EU* = {label})\n\n" + _markdown(rows, [
            "method", "Δ_ent old", "Δ_ent new", "Δ_ent paper", "ρ(EU*, σ²_ε) old",
            "ρ(EU*, σ²_ε) new", "paper"]))
    return "\n\n".join(parts)


def _noise_shape(results: Path) -> pd.DataFrame:
    """``tables/noise_shape.csv`` by (prior, coverage); a table of an older layout, without the
    coverage rows, as coverage ``all``."""
    table = pd.read_csv(results / "tables" / "noise_shape.csv")
    if "coverage" not in table:
        table = table.assign(coverage="all")
    return table.set_index(["prior", "coverage"])


def coupling_section(old: Path, new: Path) -> str:
    a, b = _noise_shape(old), _noise_shape(new)
    column = "mean_rho_posterior_variance_au"
    rows = [[p, c, b.loc[(p, c), "instances"], a[column].get((p, c), np.nan),
             b.loc[(p, c), column], b.loc[(p, c), "paper"]] for p, c in b.index]
    return ("The truth's ρ(σ²_f, σ²_ε) over the heteroscedastic instances\n\n"
            + _markdown(rows, ["prior", "coverage", "instances", "old", "new", "paper"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path, help="results folder of the old design")
    parser.add_argument("new", type=Path, help="results folder of the new design")
    parser.add_argument("--markdown", type=Path, help="also write the report to this file")
    args = parser.parse_args(argv)
    text = "\n\n".join([order_section(args.old, args.new),
                        coupling_section(args.old, args.new),
                        entanglement_section(args.old, args.new)]) + "\n"
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
