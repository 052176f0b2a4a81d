"""Loading a task reaches the configuration layer at most: a user who only loads tasks (the
light install) never imports the planner, the units, the jobs, the cost model, the workflow or
a study package. Run in a fresh interpreter, so that nothing the test session imported counts."""

import json
import subprocess
import sys

import pytest

#: The packages a task's loader must not import.
FORBIDDEN = ("postrisk.planning", "postrisk.workflow", "postrisk.studies")

PROBE = """
import json, sys
{statement}
print(json.dumps(sorted(m for m in sys.modules if m.startswith("postrisk"))))
"""


def _modules(statement: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(statement=statement)],
                         check=True, capture_output=True, text=True).stdout
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


def test_the_probe_sees_a_planning_import():
    """Negative control: the same probe, importing the planner, reports it."""
    modules = _modules("import postrisk.release.load\nimport postrisk.planning.planner")
    assert [m for m in modules if m.startswith(FORBIDDEN)]
