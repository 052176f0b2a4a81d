"""The 1-D sandbox's tables and figure: every catalogue entry written, and the tables agree with
each other and with Theorem 1."""

import numpy as np
import pandas as pd
import pytest

from postrisk.grid.artefacts import stage_artefacts
from postrisk.grid.config import load_config
from postrisk.planning.planner import Planner
from postrisk.studies.sandbox.tables import write_sandbox
from tests.workflow_helpers import REPO

#: The test's own sandbox section (config ``studies.sandbox``'s shape), small and quick.
SECTION = {"run": True, "seed": 1, "domain": [0.0, 1.0], "grid_points": 401,
           "features": {"count": 20, "offset": 0.16, "width": 1.0}, "prior_sd": 3.0,
           "noise": {"low": 0.1, "high": 0.8, "centre": 0.8, "width": 0.1},
           "training": {"n": 100, "gap_centre": 0.45, "gap_width": 0.05, "gap_depth": 0.02},
           "coverage": 0.8, "lambdas": 5}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = tmp_path_factory.mktemp("sandbox")
    out = {a.id: root / a.path for a in stage_artefacts("sandbox")}
    tables = write_sandbox(SECTION, out, "smoke")
    return out, {k: v.drop(columns="scale") for k, v in tables.items()}


def test_every_catalogue_entry_is_written_with_the_scale(written):
    out, tables = written
    for ident, path in out.items():
        assert path.exists(), ident
        if path.suffix == ".png":
            assert path.with_suffix(".pdf").stat().st_size > 0
            continue
        frame = pd.read_csv(path)
        assert list(frame.columns) == ["scale", *tables[ident].columns], ident
        assert set(frame["scale"]) == {"smoke"} and len(frame) == len(tables[ident]), ident


def test_scorer_table_agrees_with_theorem_one(written):
    _, tables = written
    scorers = tables["sandbox_scorers"].set_index("scorer")
    assert list(scorers.index) == ["ood", "bald", "eer", "risk", "regret"]
    assert np.allclose(scorers["coverage"] + scorers["rejected_mass"], 1.0)
    assert (scorers["coverage"] >= 0.8 - 1e-9).all()
    # thresholding T* reaches the lowest risk, E* the lowest regret; both lie on the surface
    assert scorers.loc["risk", "risk"] == pytest.approx(scorers.loc["risk", "lowest_risk"])
    assert scorers.loc["regret", "regret"] == pytest.approx(scorers.loc["regret",
                                                                        "lowest_regret"])
    assert scorers.loc[["risk", "regret"], "regret_above_oracle"].abs().max() < 1e-12
    # nothing beats the oracle: every scorer's regret is at least the lowest, at or above the
    # front at its risk
    assert (scorers["regret"] >= scorers["lowest_regret"] - 1e-12).all()
    assert (scorers["regret_above_oracle"] >= -1e-12).all()
    # the OOD ratio rejects one interval around the training gap
    assert scorers.loc["ood", "rejected"].count("[") == 1


def test_surface_ends_are_the_risk_and_regret_thresholds(written):
    _, tables = written
    surface = tables["sandbox_oracle_surface"]
    scorers = tables["sandbox_scorers"].set_index("scorer")
    at = surface[np.isclose(surface["target_coverage"], 0.8)].set_index("lambda")
    assert sorted(at.index) == pytest.approx(np.linspace(0.5, 1.0, 5))
    assert at.loc[1.0, "regret"] == pytest.approx(scorers.loc["regret", "regret"])
    assert at.loc[0.5, "risk"] == pytest.approx(scorers.loc["risk", "risk"])
    # along λ the risk rises and the regret falls (the front), at every target coverage
    for _, rows in surface.groupby("target_coverage"):
        rows = rows.sort_values("lambda")
        assert np.all(np.diff(rows["risk"]) >= -1e-12)
        assert np.all(np.diff(rows["regret"]) <= 1e-12)


def test_overlap_and_intervals_agree_with_the_curves(written):
    _, tables = written
    overlap = tables["sandbox_overlap"].set_index("scorer")
    assert np.allclose(np.diag(overlap.values.astype(float)), 1.0)
    assert np.allclose(overlap.values.astype(float), overlap.values.T.astype(float))
    curves, intervals = tables["sandbox_curves"], tables["sandbox_intervals"]
    scorers = tables["sandbox_scorers"].set_index("scorer")
    for name in scorers.index:
        rejected = ~curves[f"accepted_{name}"].astype(bool)
        mass = curves.loc[rejected, "weight"].sum()
        assert intervals.loc[intervals["scorer"] == name, "mass"].sum() == pytest.approx(mass)
        assert scorers.loc[name, "rejected_mass"] == pytest.approx(mass)
    for a in scorers.index:
        for b in scorers.index:
            both = ~curves[f"accepted_{a}"].astype(bool) & ~curves[f"accepted_{b}"].astype(bool)
            smaller = min(scorers.loc[a, "rejected_mass"], scorers.loc[b, "rejected_mass"])
            assert overlap.loc[a, b] == pytest.approx(curves.loc[both, "weight"].sum() / smaller)


def test_the_base_configuration_holds_a_complete_sandbox_section(tmp_path):
    from postrisk.studies.sandbox.model import SandboxSettings

    cfg = load_config(REPO / "config.yaml")
    SandboxSettings.from_config(cfg["studies"]["sandbox"])  # every key it needs is there
    assert "sandbox" in Planner(cfg).studies()
