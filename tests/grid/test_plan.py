"""The full grid planned for the cluster: the slurm profile's dry run of config.yaml (its own
file so that the fast tier's two test processes share the workflow tests evenly)."""

import pytest

from postrisk.grid.artefacts import figure_ids
from tests.workflow_helpers import REPO, dry_run_jobs, job_counts, snakemake

#: These tests start Snakemake (select them with `-m workflow`).
pytestmark = pytest.mark.workflow


def test_slurm_profile_plans_the_full_grid_with_the_cost_models_resources(tmp_path,
                                                                         monkeypatch):
    """`snakemake --profile profiles/slurm -n` on config.yaml: the whole grid; every job asks for
    the threads, runtime and memory of the cost model (exactly what `postrisk plan` reports);
    MCMC posteriors, and only they, ask for a GPU on the GPU partition."""
    from postrisk.grid import Planner
    from postrisk.methods.table import METHOD_ENTRIES

    monkeypatch.setenv("SLURM_ACCOUNT", "dummy")
    run = snakemake(tmp_path, "--profile", str(REPO / "profiles" / "slurm"),
                    "--sdm", "env-modules", "-n")
    assert run.returncode == 0, run.stderr[-3000:]
    counts = job_counts(run.stdout)
    cells = 13 * 4 * 2  # datasets × noise × coverage
    per_family = cells * 13  # every candidate seed: validity is decided by the BNN R̂
    assert counts["covariates"] == 14 and counts["prior"] == 13 * 3
    assert counts["sample"] == 3 * per_family
    assert counts["posterior_exact"] == per_family and counts["posterior_mcmc"] == 2 * per_family
    assert counts["valid_seeds"] == cells
    methods = len(METHOD_ENTRIES)  # every implemented method (each job tunes, then fits)
    assert counts["fit"] == methods * 3 * cells and counts["score"] == 3 * cells
    assert counts["checks"] == counts["tables"] == counts["report"] == 1
    assert counts["figure"] == len(figure_ids())
    for name in ("abalone", "sarcos", "white_wine", "red_wine"):
        assert f"results/covariates/{name}.zarr" in run.stdout

    planner = Planner.from_files(REPO / "config.yaml")
    expected = {}
    for rules in planner.rules.values():
        for rule in rules:
            for ident, job in rule.jobs.items():
                expected[(rule.name, ident)] = job.resources
    jobs = [j for j in dry_run_jobs(run.stdout) if j["rule"] != "all"]
    assert len(jobs) == counts["total"] - 1 == len(expected)
    rules_by_name = {r.name: r for rs in planner.rules.values() for r in rs}
    for job in jobs:
        res = job["resources"]
        assert {"runtime", "mem_mb", "gpu"} <= set(res), job
        ident = tuple(job["wildcards"][k] for k in rules_by_name[job["rule"]].keys)
        want = expected[(job["rule"], ident)]
        got = (job["threads"], int(res["runtime"]), int(res["mem_mb"]), int(res["gpu"]))
        assert got == (want.threads, want.runtime, want.mem_mb, want.gpu), job
        on_gpu = job["rule"] in ("posterior_mcmc", "warmup_posterior")  # MCMC posteriors
        assert (int(res["gpu"]) == 1) == on_gpu, job
        assert res["slurm_partition"] == ("gpu" if on_gpu else "cpu"), job
    # not capped at 1 (`cores`): the most threads any job of the rule asks for (NGBoost's fit
    # jobs ask for 1, the others for 2; the order of the dry run's jobs is not fixed)
    threads = {}
    for j in jobs:
        threads[j["rule"]] = max(threads.get(j["rule"], 0), j["threads"])
    assert threads["posterior_mcmc"] == 4 and threads["fit"] == 2
