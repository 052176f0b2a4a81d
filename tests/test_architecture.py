"""The library's architecture is a checked fact: the import contracts in pyproject.toml hold."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    """Stages import only downwards (the studies on top, the release below the report);
    methods never import tasks, priors, covariates or the evaluation; GP mathematics has one
    home; the studies do not import each other; no cycle anywhere (``lint-imports``)."""
    lint = Path(sys.executable).with_name("lint-imports")
    run = subprocess.run([str(lint), "--no-cache"], capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout


def test_every_stage_is_a_package():
    """The folder list shows the pipeline: one package per stage, no loose modules but the
    command line and the package's own entry point."""
    src = REPO / "src/postrisk"
    loose = sorted(p.name for p in src.glob("*.py") if p.name not in ("__init__.py", "cli.py"))
    assert loose == []
    stages = {"core", "covariates", "gp", "priors", "tasks", "methods", "tuning", "grid",
              "evaluation", "release", "report", "workflow", "studies"}
    assert stages <= {p.name for p in src.iterdir() if (p / "__init__.py").exists()}


def test_every_study_is_a_package_and_the_planner_names_none():
    """One package per study under postrisk.studies, each registered by its ``STUDY``; the
    planning layer (planner, jobs, stages) and the rules' shared file name no study."""
    from postrisk.grid.study import studies

    packages = {p.name for p in (REPO / "src/postrisk/studies").iterdir()
                if (p / "__init__.py").exists()}
    assert len(packages) >= 4
    assert packages <= {s.name for s in studies()}
    planning = [*(REPO / "src/postrisk/planning").glob("*.py"),
                *(REPO / "src/postrisk/grid").glob("*.py")]
    for path in [*planning, REPO / "rules/common.smk", REPO / "rules/studies.smk"]:
        text = path.read_text()
        for study in studies():
            named = [line for line in text.splitlines()
                     if study.name in line and not line.lstrip().startswith("#")]
            assert not named, f"{path.name} names the study {study.name}: {named}"
