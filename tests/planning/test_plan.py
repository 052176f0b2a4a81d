"""The grid planned for the cluster: the slurm profile's dry run of config.yaml, narrowed to a few
datasets, noise modes and seeds so that every rule of the full grid still has jobs (its own file
so that the fast tier's two test processes share the workflow tests evenly). The full grid's dry
run with the profile runs in the slow tier, as the user guide's command
(tests/workflow/test_documented_commands.py); the planner's full-grid counts are checked without
Snakemake (tests/planning/test_jobs.py)."""

import pytest
import yaml

from postrisk.grid.config import load_config
from postrisk.planning.cost import CostModel
from postrisk.planning.planner import Planner
from tests.workflow_helpers import REPO, dry_run_jobs, job_counts, snakemake

#: These tests start Snakemake (select them with `-m workflow`).
pytestmark = pytest.mark.workflow

#: config.yaml narrowed: Concrete (the DE experiment's grid), kin8nm (the warm-up study's) and
#: White Wine (the OOD study's in-distribution set), two noise modes, 2 valid seeds of 3.
NARROW = {"datasets": ["concrete", "kin8nm", "white_wine"],
          "noise_modes": ["smooth_monotone", "bump"],
          "seeds": {"valid_per_cell": 2, "candidates": 3},
          # a user's cost entry, over the fitted cost model (cost_model.yaml): it wins
          "cost_model": {"fit": {"nn_ens": {"minutes": 500.0}}}}


def test_slurm_profile_plans_the_grid_with_the_cost_models_resources(tmp_path, monkeypatch):
    """`snakemake --profile profiles/slurm -n` on config.yaml (narrowed): every job of every rule
    of the full grid's kinds, each asking for the threads, runtime and memory of the cost model
    (exactly what `postrisk plan` reports); MCMC posteriors, and only they, ask for a GPU on the
    GPU partition."""
    narrow = tmp_path / "narrow.yaml"
    narrow.write_text(yaml.safe_dump(NARROW))
    monkeypatch.setenv("SLURM_ACCOUNT", "dummy")
    run = snakemake(tmp_path, "--profile", str(REPO / "profiles" / "slurm"),
                    "--sdm", "env-modules", "-n", "--configfile", str(narrow))
    assert run.returncode == 0, run.stderr[-3000:]
    cfg = load_config(REPO / "config.yaml", narrow)
    planner = Planner(cfg)
    full = Planner(load_config(REPO / "config.yaml"))
    rules_of = {r.name: r for rs in planner.rules.values() for r in rs if r.jobs}
    assert set(rules_of) == {r.name for rs in full.rules.values() for r in rs if r.jobs}

    counts = job_counts(run.stdout)
    assert {k: v for k, v in counts.items() if k not in ("all", "total")} == {
        name: len(rule.jobs) for name, rule in rules_of.items()}
    for name in ("concrete", "kin8nm", "white_wine", "red_wine"):  # Red Wine: the OOD set
        assert f"results/covariates/{name}.zarr" in run.stdout

    jobs = [j for j in dry_run_jobs(run.stdout) if j["rule"] != "all"]
    assert len(jobs) == counts["total"] - 1 == sum(len(r.jobs) for r in rules_of.values())
    threads = {}
    for job in jobs:
        res = job["resources"]
        assert {"runtime", "mem_mb", "gpu"} <= set(res), job
        rule = rules_of[job["rule"]]
        want = rule.jobs[tuple(job["wildcards"][k] for k in rule.keys)].resources
        got = (job["threads"], int(res["runtime"]), int(res["mem_mb"]), int(res["gpu"]))
        assert got == (want.threads, want.runtime, want.mem_mb, want.gpu), job
        on_gpu = job["rule"] in ("posterior_mcmc", "warmup_check_posterior")  # MCMC posteriors
        assert (int(res["gpu"]) == 1) == on_gpu, job
        assert res["slurm_partition"] == ("gpu" if on_gpu else "cpu"), job
        threads[job["rule"]] = max(threads.get(job["rule"], 0), job["threads"])
    # not capped at 1 (`cores`): the most threads any job of the rule asks for (the order of
    # the dry run's jobs is not fixed)
    cost = CostModel.of(cfg)
    assert threads["posterior_mcmc"] == max(cost.entry("posterior", p, gpu=True)["threads"]
                                            for p in ("hbart", "bnn"))
    assert threads["fit"] == max(cost.entry("fit", m)["threads"] for m in cfg["methods"])
    assert threads["fit"] > 1
    # the user's entry reached Snakemake: NN-Ens's fit jobs ask for its minutes (× the margin)
    ens = [j for j in jobs if j["rule"] == "fit" and j["wildcards"]["method"] == "nn_ens"]
    assert ens and all(int(j["resources"]["runtime"]) >= 500 * cfg["cost_model"]["margin"]
                       for j in ens)
