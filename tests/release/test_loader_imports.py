"""Loading a task reaches the configuration layer at most: a user who only loads tasks (the
light install) never imports the planner, the units, the jobs, the cost model, the workflow or
a study package. Run in a fresh interpreter, so that nothing the test session imported counts."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: The packages a task's loader must not import.
FORBIDDEN = ("postrisk.planning", "postrisk.workflow", "postrisk.studies")

PROBE = """
import json, sys
{statement}
print(json.dumps(sorted(m for m in sys.modules if m.startswith("postrisk"))))
"""


def _modules(statement: str, cwd: Path | None = None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "POSTRISK_DATA"}
    out = subprocess.run([sys.executable, "-c", PROBE.format(statement=statement)], cwd=cwd,
                         env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("statement", [
    "import postrisk.release.load",
    "import postrisk; from postrisk.release.embedded import embedded_keys\n"
    "task = postrisk.get_task(embedded_keys()[0]); task.oracle",
    "import postrisk; from postrisk.release.embedded import embedded_root\n"
    "entries = postrisk.list_tasks(root=embedded_root())\n"
    "postrisk.load_task(entries[-1].label, root=embedded_root())",
])
def test_loading_a_task_imports_no_planning_module(statement):
    modules = _modules(statement)
    assert "postrisk.release.load" in modules  # the probe did load
    planning = [m for m in modules if m.startswith(FORBIDDEN)]
    assert not planning, f"loading a task imported {planning}"


def test_the_default_root_is_found_without_the_planning_layer(tmp_path):
    """Without a root (no ``$POSTRISK_DATA``, no config.yaml here): the packaged configuration's
    download folder, read from its ``release`` section alone (validating the whole
    configuration would look up every study package, and they import the planner)."""
    modules = _modules("import postrisk\nfrom postrisk.release.load import default_root\n"
                       "postrisk.list_tasks(); print(default_root())", cwd=tmp_path)
    assert "postrisk.grid.config" in modules  # the configuration was read
    planning = [m for m in modules if m.startswith(FORBIDDEN)]
    assert not planning, f"finding the default root imported {planning}"


def test_the_probe_sees_a_planning_import():
    """Negative control: the same probe, importing the planner, reports it."""
    modules = _modules("import postrisk.release.load\nimport postrisk.planning.planner")
    assert [m for m in modules if m.startswith(FORBIDDEN)]
