"""Run the real Snakemake workflow of this checkout in a scratch working directory."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def snakemake(workdir: Path, *args: str, env: dict | None = None,
              timeout: float = 600) -> subprocess.CompletedProcess:
    cmd = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(workdir), *args]
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=timeout)


_RULE_ENVS = """
import json, sys, tempfile
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import (ConfigSettings, DeploymentMethod, DeploymentSettings,
                                      OutputSettings, ResourceSettings)

repo, configfiles = Path(sys.argv[1]), [Path(p).resolve() for p in sys.argv[2:]]
with SnakemakeApi(OutputSettings(quiet=None)) as api:
    workflow = api.workflow(
        resource_settings=ResourceSettings(cores=1),
        config_settings=ConfigSettings(configfiles=configfiles),
        deployment_settings=DeploymentSettings(deployment_method={DeploymentMethod.CONDA}),
        snakefile=repo / "Snakefile", workdir=Path(tempfile.mkdtemp()))._workflow
    envs = {r.name: str(r.conda_env) if r.conda_env else None for r in workflow.rules}
print("ENVS" + json.dumps(envs))
"""


def rule_environments(*configfiles: Path) -> dict[str, str | None]:
    """Each rule's conda environment file as the workflow declares it (Snakemake's API loads
    the Snakefile with the config files merged over config.yaml; no conda needed)."""
    run = subprocess.run([sys.executable, "-c", _RULE_ENVS, str(REPO), *map(str, configfiles)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    line = next(x for x in run.stdout.splitlines() if x.startswith("ENVS"))
    return json.loads(line[4:])


def job_counts(stdout: str) -> dict[str, int]:
    table = stdout.split("Job stats:")[-1]
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^(\w+)\s+(\d+)$", table, flags=re.MULTILINE)}


def dry_run_jobs(stdout: str) -> list[dict]:
    """Every job of a dry run's printout: rule, wildcards, threads (1 when not printed) and
    resources, as printed."""
    jobs = []
    for block in re.split(r"^\[.*\]\n(?=rule )", stdout, flags=re.MULTILINE)[1:]:
        rule = re.match(r"rule (\w+):", block).group(1)
        fields = dict(re.findall(r"^    (\w+): (.*)$", block, flags=re.MULTILINE))
        wildcards = dict(kv.split("=", 1) for kv in fields.get("wildcards", "").split(", ") if kv)
        resources = dict(kv.split("=", 1) for kv in fields.get("resources", "").split(", ") if kv)
        jobs.append({"rule": rule, "wildcards": wildcards,
                     "threads": int(fields.get("threads", 1)), "resources": resources})
    return jobs
