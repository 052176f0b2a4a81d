"""The cost model's benchmark (benchmarks/cost_model.py) and its writer into cost_model.yaml
(benchmarks/cost_config.py): the curve fit recovers a known curve, the writer changes only the
entries it writes, keeps every comment, and yields a config that validates."""

import shutil
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

from cost_config import write_entries  # noqa: E402
from cost_model import fit_curve, fitted_entries  # noqa: E402
from postrisk.grid.config import deep_merge, read_layers, validate_config  # noqa: E402


@pytest.mark.parametrize("base, per, power", [(0.5, 2.0, 1.0), (3.0, 0.4, 2.0), (0.0, 7.0, 1.3)])
def test_the_fit_recovers_a_known_curve(base, per, power):
    rows = [863, 2760, 6271]
    seconds = [60 * (base + per * (r / 1000) ** power) for r in rows]
    curve = fit_curve(rows, seconds)
    predicted = [curve["minutes"] + curve["minutes_per_size"] * (r / 1000) ** curve["power"]
                 for r in [500, *rows, 8000]]
    truth = [base + per * (r / 1000) ** power for r in [500, *rows, 8000]]
    assert predicted == pytest.approx(truth, rel=1e-3)
    assert curve["worst_rel_error"] < 1e-4


def _point(stage, name, rows, seconds):
    return {"dataset": "x", "rows": str(rows), "d": "8", "stage": stage, "name": name,
            "seconds": str(seconds), "how": "measured", "detail": "{}",
            "machine": "a machine", "date": "2026-12-03"}


def test_anchors_scale_an_entry_and_its_family():
    points = [_point("fit", m, r, s) for m in ("nn_ens", "nn_drop", "blr")
              for r, s in ((863, 100.0), (2760, 300.0), (6271, 700.0))]
    entries = {e["name"]: e for e in fitted_entries(points, {("fit", "nn_ens"): (863, 50.0)})}
    assert entries["nn_ens"]["scale"] == pytest.approx(0.5)
    assert entries["nn_drop"]["scale"] == pytest.approx(0.5)  # its family's anchor
    assert entries["blr"]["scale"] == 1.0 and not entries["blr"]["anchored"]


def test_the_writer_changes_only_its_entries_and_the_config_validates(tmp_path):
    config = tmp_path / "cost_model.yaml"
    shutil.copy(REPO / "cost_model.yaml", config)
    before = yaml.safe_load(config.read_text())["cost_model"]
    curve = {"minutes": 0.51234, "minutes_per_size": 1.23456, "power": 1.5,
             "worst_rel_error": 0.0}
    entries = [{"stage": s, "name": n, "rows": [863, 2760, 6271], "curve": curve,
                "how": "measured", "anchored": "", "machine": "a machine",
                "date": "2026-12-03"}
               for s, n in (("covariates", ""), ("sample", "gp"), ("fit", "nn_ens"),
                            ("fit", "dkl"), ("job", ""))]
    assert write_entries(config, entries) == 5
    text = config.read_text()
    # the written file, laid over config.yaml alone, validates against the schema
    written_model = yaml.safe_load(text)
    after = validate_config(deep_merge(read_layers(REPO / "config.yaml", cost_model=False)[0],
                                       written_model))["cost_model"]
    def written(entry):  # the time model replaced; the memory model keeps the power it had
        return {**entry, "minutes": 0.512, "minutes_per_size": 1.23, "power": 1.5,
                "mem_power": entry.get("mem_power", entry.get("power", 1.0))}

    assert after["fit"]["nn_ens"] == written(before["fit"]["nn_ens"])
    assert after["fit"]["dkl"] == written(before["fit"].get("dkl", before["fit"]["default"]))
    # a single entry becomes the default beside the names
    assert after["sample"]["default"] == (before["sample"] if "threads" in before["sample"]
                                          else before["sample"]["default"])
    assert after["sample"]["gp"]["minutes_per_size"] == 1.23
    assert after["job_minutes"] == 0.512
    untouched = set(before) - {"covariates", "sample", "fit", "job_minutes"}
    assert all(after[k] == before[k] for k in untouched)
    assert all(after["fit"][m] == before["fit"][m] for m in before["fit"]
               if m not in ("nn_ens", "dkl"))
    # every other comment line of the file is still there, and writing again changes nothing
    comments = [ln.strip() for ln in (REPO / "cost_model.yaml").read_text().splitlines()
                if ln.strip().startswith("#")  # but an earlier "# measured" note, replaced
                and not ln.strip().startswith(("# measured", "#   "))]
    assert set(comments) <= {ln.strip() for ln in text.splitlines()}
    assert text.count("# measured: 2026-12-03, a machine") == 5
    write_entries(config, entries)
    assert config.read_text() == text


def test_a_later_days_points_are_put_on_the_first_days_footing(tmp_path):
    """Reference units timed again on a faster day give the factor (their median ratio); that
    day's points are multiplied by it before the fit, and the entry says so."""
    import csv

    from cost_anchors import speed_factors

    first = [_point("fit", "blr", 863, 10.0), _point("prior", "gp", 863, 40.0),
             _point("sample", "gp", 863, 3.0)]
    later = [{**_point("fit", m, r, s), "date": "2026-12-04"}
             for m, r, s in (("catboost_ps", 863, 50.0), ("catboost_ps", 2760, 60.0),
                             ("catboost_ps", 6271, 90.0))]
    reference = tmp_path / "speed.csv"
    with reference.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(first[0]))
        writer.writeheader()
        for p, s in zip(first, (5.0, 20.0, 1.0), strict=True):  # 2x, 2x, 3x faster
            writer.writerow({**p, "seconds": str(s), "date": "2026-12-04"})
    speed = speed_factors(reference, first + later)
    assert speed == {"2026-12-04": (2.0, 3)}
    entry = next(e for e in fitted_entries(first + later, {}, speed)
                 if e["name"] == "catboost_ps")
    predicted = [60 * (entry["curve"]["minutes"] + entry["curve"]["minutes_per_size"]
                       * (r / 1000) ** entry["curve"]["power"]) for r in (863, 2760, 6271)]
    assert predicted == pytest.approx([100.0, 120.0, 180.0], rel=0.05)
    assert "× 2.00 for that day's machine speed" in entry["how"]
