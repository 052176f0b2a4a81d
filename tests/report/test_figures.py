"""The report's figures (postrisk.report.figures): both files written, methods best first,
reference rows apart, empty inputs drawn as a message."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from postrisk.report import figures as F

NAN = float("nan")
TARGETS = list(F.RHO_TARGETS)


def _mean_rho() -> pd.DataFrame:
    """Three methods and two reference rows; dkl without intervals (fewer than 3 datasets),
    constant_au and the AU of blr not applicable."""
    means = {"gp": (0.8, 0.7, 0.3, NAN), "blr": (0.2, 0.5, 0.1, NAN),
             "dkl": (0.5, 0.6, 0.2, 0.4), "oracle": (1.0, 1.0, 0.35, 1.0),
             "constant_au": (NAN, NAN, NAN, NAN)}
    rows = []
    for method, values in means.items():
        kind = "reference" if method in F.REFERENCE_ROWS else "method"
        for target, mean in zip(TARGETS, values, strict=True):
            wide = method != "dkl" and not np.isnan(mean)
            rows.append({"method": method, "display_name": F.display_name(method), "kind": kind,
                         "target": target, "mean": mean,
                         "ci_low": mean - 0.1 if wide else NAN,
                         "ci_high": mean + 0.05 if wide else NAN,
                         "paper_mean": 0.65 if (method, target) == ("gp", TARGETS[0]) else NAN})
    return pd.DataFrame(rows)


def _entanglement(target: str, deltas: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame([{"method": m, "display_name": F.display_name(m), "target": target,
                          "instances": 4, "delta_ent": d, "delta_ent_ci_low": d - 0.1,
                          "delta_ent_ci_high": d + 0.1 if m != "nn_ens" else NAN,
                          "paper_delta_ent": 0.2 if m == "vlgp" else NAN}
                         for m, d in deltas.items()])


def _scores() -> pd.DataFrame:
    rows = []
    base = {"gp": 0.9, "blr": 0.3, "nn_ens": 0.6, "oracle": 1.0}
    for d, dataset in enumerate(["concrete", "diamonds"]):
        for seed in range(2):
            for method, value in base.items():
                # on diamonds blr beats nn_ens: the order is per panel
                v = value + (0.4 if (dataset, method) == ("diamonds", "blr") else 0.0)
                rows.append({"dataset": dataset, "prior": "gp", "noise": "edges",
                             "coverage": "balanced", "seed": seed, "heteroscedastic": True,
                             "method": method,
                             "kind": "reference" if method == "oracle" else "method",
                             "status": "ok", "spearman_eu_posterior_excess_risk": v + 0.05 * seed,
                             "spearman_au": NAN if method == "gp" else 0.1 * d + 0.2})
    return pd.DataFrame(rows)


def _labels(fig, panel: int = 0) -> list[str]:
    labels = [t.get_text() for t in fig.axes[panel].get_yticklabels()]
    plt.close(fig)
    return labels


def _check_files(paths, stem) -> None:
    assert [p.name for p in paths] == [stem.name + ".png", stem.name + ".pdf"]
    for path in paths:
        assert path.exists() and path.stat().st_size > 1024
    assert paths[1].read_bytes().startswith(b"%PDF")
    assert paths[0].read_bytes().startswith(b"\x89PNG")


def test_method_order_best_first_references_last():
    frame = pd.DataFrame({"method": ["oracle", "blr", "gp", "dkl", "knn10"],
                          "kind": ["reference", "method", "method", "method", "reference"],
                          "mean": [1.0, 0.2, 0.8, NAN, 0.5]})
    assert F.method_order(frame, "mean") == ["gp", "blr", "dkl", "oracle", "knn10"]
    assert F.method_order(frame, "mean", ascending=True) == ["blr", "gp", "dkl", "knn10",
                                                            "oracle"]
    assert F.method_order(frame.drop(columns="kind"), "mean")[-2:] == ["oracle", "knn10"]
    assert F.method_order(frame.iloc[:0], "mean") == []


def test_mean_rho_figure(tmp_path):
    frame = _mean_rho()
    assert _labels(F.draw_mean_rho(frame)) == ["GP", "DKL", "BLR", "Oracle", "Constant AU"]
    fig = F.draw_mean_rho(frame)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    plt.close(fig)
    assert texts.count("n/a") == 4 + 2  # constant_au in every panel, gp and blr AU
    stem = tmp_path / "figures" / "fig2_mean_rho"
    _check_files(F.figure_mean_rho(frame, "demo", stem), stem)


def test_entanglement_figure(tmp_path):
    t8 = _entanglement("posterior_excess_risk", {"nn_ens": 0.3, "vlgp": -0.1, "gp": 0.05})
    t9 = _entanglement("posterior_variance", {"nn_ens": 0.2, "vlgp": 0.0})
    assert _labels(F.draw_entanglement(t8, t9)) == ["VLGP", "GP", "NN-Ens"]
    fig = F.draw_entanglement(t8, t9)
    texts = [t.get_text() for t in fig.axes[0].texts]
    plt.close(fig)
    assert texts == ["n/a"]  # gp has no posterior-variance row
    stem = tmp_path / "fig3a_entanglement"
    _check_files(F.figure_entanglement(t8, t9, "demo", stem), stem)


def test_entanglement_figure_empty(tmp_path):
    empty = _entanglement("posterior_excess_risk", {}).reindex(
        columns=["method", "target", "delta_ent", "delta_ent_ci_low", "delta_ent_ci_high"])
    fig = F.draw_entanglement(empty, empty)
    assert [t.get_text() for t in fig.axes[0].texts] == ["no method with heteroscedastic AU"]
    plt.close(fig)
    stem = tmp_path / "fig3a_entanglement"
    _check_files(F.figure_entanglement(empty, empty, "paper", stem), stem)


def test_matched_prior_figure(tmp_path):
    ranks = pd.DataFrame({"method": ["blr"] * 3 + ["gp"] * 3 + ["vlgp"] * 3,
                          "prior": list(F.PRIORS) * 3,
                          "rank": [3.0, 2.5, 1.0, 1.0, 1.5, 2.0, 2.0, 2.0, 3.0]})
    ranks.insert(1, "display_name", ranks["method"].map(F.display_name))
    assert _labels(F.draw_matched_prior(ranks)) == ["GP", "BLR", "VLGP"]
    stem = tmp_path / "fig7_matched_prior"
    _check_files(F.figure_matched_prior(ranks, "demo", stem), stem)
    empty = ranks.iloc[:0]
    fig = F.draw_matched_prior(empty)
    assert fig.axes[0].texts[0].get_text() == "no method scored in every condition"
    plt.close(fig)
    _check_files(F.figure_matched_prior(empty, "demo", stem), stem)


def test_per_dataset_figure(tmp_path):
    scores = _scores()
    fig = F.draw_per_dataset(scores)
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    plt.close(fig)
    assert titles == ["concrete (2 instances; bars: min–max)",
                      "diamonds (2 instances; bars: min–max)"]
    assert _labels(F.draw_per_dataset(scores), 0) == ["GP", "NN-Ens", "BLR"]  # no oracle
    assert _labels(F.draw_per_dataset(scores), 1) == ["GP", "BLR", "NN-Ens"]
    fig = F.draw_per_dataset(scores, "spearman_au")
    assert [t.get_text() for t in fig.axes[0].texts] == ["n/a"]  # gp: AU not applicable
    assert _labels(fig)[-1] == "GP"
    stem = tmp_path / "fig8_per_dataset_eu"
    _check_files(F.figure_per_dataset(scores, "demo", stem), stem)


@pytest.mark.parametrize("scale", ["demo", "paper"])
def test_scale_note(tmp_path, scale, monkeypatch):
    notes = []
    real = F.save_png_pdf

    def spy(fig, stem, scale):
        out = real(fig, stem, scale)
        notes.append(fig._suptitle.get_text() if fig._suptitle is not None else "")
        return out

    monkeypatch.setattr(F, "save_png_pdf", spy)
    F.figure_matched_prior(pd.DataFrame(columns=["method", "prior", "rank"]), scale,
                           tmp_path / "fig")
    assert notes == [F.scale_note(scale)]
    assert bool(notes[0]) == (scale != "paper")
