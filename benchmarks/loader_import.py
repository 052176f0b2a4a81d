"""What loading a task costs at import: the postrisk modules `import postrisk.release.load` and
`postrisk.get_task` bring in, the planning ones among them, and the time (median of fresh
interpreters).

    uv run python benchmarks/loader_import.py [--repeats 5]

The planning layer (the planner, units, jobs, cost) is for running the grid; a user who only loads
tasks should not pay for it. Prints, per entry point, the module counts and the median time, and
the ratio to a baseline measured in the same run: the same statement followed by importing the
planner (what the loader cost while it pulled the planning layer in).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

ENTRY_POINTS = {
    "import postrisk.release.load": "import postrisk.release.load",
    "postrisk.get_task(key) (a task loaded)": "import postrisk; from postrisk.release.embedded "
                                               "import embedded_keys; "
                                               "postrisk.get_task(embedded_keys()[0])",
}

PROBE = """
import sys, time
t = time.perf_counter()
{statement}
t = time.perf_counter() - t
mods = sorted(m for m in sys.modules if m == "postrisk" or m.startswith("postrisk."))
planning = [m for m in mods if m.startswith(("postrisk.planning", "postrisk.workflow",
            "postrisk.grid.planner", "postrisk.grid.units", "postrisk.grid.jobs",
            "postrisk.grid.cost", "postrisk.grid.plan", "postrisk.grid.conditions",
            "postrisk.grid.seeds", "postrisk.studies"))]
import json; print(json.dumps({{"seconds": t, "modules": len(mods), "planning": planning}}))
"""


def measure(statement: str, repeats: int) -> dict:
    runs = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", PROBE.format(statement=statement)],
                             check=True, capture_output=True, text=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    return {"seconds": statistics.median(r["seconds"] for r in runs),
            "modules": runs[-1]["modules"], "planning": runs[-1]["planning"]}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    for name, statement in ENTRY_POINTS.items():
        m = measure(statement, args.repeats)
        base = measure(statement + "\nimport postrisk.planning.planner", args.repeats)
        print(f"{name}: {m['modules']} postrisk modules, {len(m['planning'])} of the planning "
              f"layer, {m['seconds']:.3f} s (median of {args.repeats}); with the planner "
              f"imported too: {base['modules']} modules, {base['seconds']:.3f} s; ratio "
              f"{m['seconds'] / base['seconds']:.2f}")
        if m["planning"]:
            print("  planning modules:", ", ".join(m["planning"]))


if __name__ == "__main__":
    main()
