"""The library's architecture is a checked fact: the import contracts in pyproject.toml hold."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    """Stages import only downwards; methods never import tasks, priors, covariates or the
    evaluation; GP mathematics has one home; no cycle inside methods (``lint-imports``)."""
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
              "evaluation", "report", "workflow"}
    assert stages <= {p.name for p in src.iterdir() if (p / "__init__.py").exists()}
