"""benchmarks/compare_results.py: what a change added on purpose (``--added``) is set aside and
counted, and a changed number beside an addition is still a difference."""

import json
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

from compare_results import compare  # noqa: E402


def _tree(root: Path, *, added: bool, changed: bool = False) -> Path:
    (root / "tables").mkdir(parents=True)
    wide = pd.DataFrame({"method": ["a", "b"], "rho": [0.5, 0.25 + (0.1 if changed else 0)]})
    long = pd.DataFrame({"method": ["a", "a"], "metric": ["rho", "tau"], "value": [0.5, 0.1]})
    tables = ["scores"]
    if added:
        wide["rho_crps_target"] = [0.1, 0.2]
        long = pd.concat([long, pd.DataFrame({"method": ["a"], "metric": ["rho_crps_target"],
                                              "value": [0.3]})])
        pd.DataFrame({"x": [1]}).to_csv(root / "tables" / "crps_table.csv", index=False)
        tables.append("crps_table")
    wide.to_csv(root / "tables" / "scores.csv", index=False)
    long.to_csv(root / "tables" / "long.csv", index=False)
    (root / "manifest.json").write_text(json.dumps({"tables": tables}))
    return root


def test_additions_are_set_aside_and_counted(tmp_path):
    before = _tree(tmp_path / "a", added=False)
    after = _tree(tmp_path / "b", added=True)
    _, lines = compare(before, after, [], {})
    assert len(lines) == 4  # the new file, the new column, the new row, the manifest entry
    tally = {"files": 0, "columns": 0, "rows": 0}
    checked, lines = compare(before, after, [], {}, added=["*crps*"], tally=tally)
    assert lines == [] and checked == 3
    assert tally == {"files": 1, "columns": 1, "rows": 1}


def test_a_changed_number_beside_an_addition_is_a_difference(tmp_path):
    before = _tree(tmp_path / "a", added=False)
    after = _tree(tmp_path / "b", added=True, changed=True)
    _, lines = compare(before, after, [], {}, added=["*crps*"])
    assert len(lines) == 1 and lines[0].startswith("tables/scores.csv: rho: 1 value(s) differ")


def test_wall_times_are_not_numbers_of_the_run(tmp_path):
    """A measured time (``posterior_s``, the warm-up check's ``posterior_s_base``) differs from
    run to run and is not compared; a column that only starts like one is."""
    for name, seconds in (("a", 10.0), ("b", 17.5)):
        (tmp_path / name / "studies").mkdir(parents=True)
        pd.DataFrame({"seed": [0], "posterior_s_base": [seconds], "posterior_s_long": [seconds],
                      "posterior_sd": [0.5 if name == "a" else 0.6]}).to_csv(
            tmp_path / name / "studies" / "warmup.csv", index=False)
    _, lines = compare(tmp_path / "a", tmp_path / "b", [], {})
    assert len(lines) == 1 and "posterior_sd" in lines[0]
