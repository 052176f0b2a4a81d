"""The paper's own numbers, printed beside ours in every table (a copy ships with the package:
``postrisk/data/paper_numbers.csv``).

Columns: ``source`` (the table, appendix or the main text the number is from), ``quantity``,
``group`` (a method's display name, a prior, an EU target, …), ``item`` and ``value``
(text; most are numbers). Rows taken from the running text (``text``, ``appB7``, ``appD1``)
quote numbers the paper states in words, e.g. the matched-prior mean ranks of its App. D.1.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

import pandas as pd


@cache
def paper_numbers() -> pd.DataFrame:
    """Every number of the shipped copy, as text (``value``) and as a number (``number``, NaN
    where the value is not one, e.g. a range "0.880-0.932")."""
    with files("postrisk").joinpath("data/paper_numbers.csv").open(encoding="utf-8") as fh:
        frame = pd.read_csv(fh, dtype=str, keep_default_na=False)
    frame["number"] = pd.to_numeric(frame["value"], errors="coerce")
    return frame


def paper_value(source: str, quantity: str, group: str, item: str = "") -> float | None:
    """One number of the paper, or ``None`` where the paper gives none."""
    frame = paper_numbers()
    hit = frame[(frame["source"] == source) & (frame["quantity"] == quantity)
                & (frame["group"] == group) & (frame["item"] == item)]
    if hit.empty or pd.isna(hit["number"].iloc[0]):
        return None
    return float(hit["number"].iloc[0])


def paper_text(source: str, quantity: str, group: str, item: str = "") -> str | None:
    """One entry of the paper as written (ranges such as "0.880-0.932" stay text)."""
    frame = paper_numbers()
    hit = frame[(frame["source"] == source) & (frame["quantity"] == quantity)
                & (frame["group"] == group) & (frame["item"] == item)]
    return None if hit.empty else str(hit["value"].iloc[0])


def reported_fit_hours() -> dict[str, float]:
    """The wall-clock hours the paper reports for its fits (App. C), by part: ``final fits``
    and ``sweeps`` (each where the shipped copy has it)."""
    parts = {part: paper_value("text", quantity, "all", "wall_hours") for part, quantity in
             (("final fits", "compute_fit_hours"), ("sweeps", "compute_tuning_hours"))}
    return {part: hours for part, hours in parts.items() if hours is not None}


#: The breakdowns of the truth's AU–EU coupling that :func:`truth_coupling` reads off Table 9.
TRUTH_COUPLING_GROUPS = ("GP", "HBART", "BNN", "balanced", "ood")


def truth_coupling(group: str) -> float | None:
    """The paper's ρ(σ²_f, σ²_ε) of the ground truth in one breakdown of its benchmark: a prior
    (``GP``, ``HBART``, ``BNN``), a coverage (``balanced``, ``ood``) or ``all`` (its 0.42).

    The paper states the overall value only; Table 9 gives the rest implicitly: Δ_ent =
    ρ(ÊU, ÂU) − ρ(EU*, AU*) per breakdown, and NGBoost-NIG's ρ(ÊU, ÂU) is 1.00 in every one, so
    the truth's coupling there is 1.00 − its Δ_ent (0.35 GP, 0.46 HBART, 0.47 BNN, 0.48
    balanced, 0.37 OOD). None for a breakdown the paper does not give."""
    if group == "all":
        return paper_value("text", "rho_true_posterior_variance_vs_au", "all", "mean")
    quantity = ("delta_ent_by_coverage" if group in ("balanced", "ood")
                else "delta_ent_by_prior")
    delta = paper_value("table9", quantity, "NGBoost-NIG", group)
    coupling = paper_value("table9", "rho_eu_au_hat", "NGBoost-NIG", "posterior_variance")
    return None if delta is None or coupling is None else round(coupling - delta, 10)
