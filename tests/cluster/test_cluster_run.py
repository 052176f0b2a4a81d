"""The README's cluster command on a real SLURM cluster: the smoke preset through
``--profile profiles/slurm``, unedited, gives the same outputs as the same preset run locally."""

import re
import subprocess
import sys

from tests.workflow_helpers import REPO


def compare(a, b) -> subprocess.CompletedProcess:
    """benchmarks/compare_results.py on two runs' results folders."""
    return subprocess.run([sys.executable, str(REPO / "benchmarks/compare_results.py"),
                           str(a / "results"), str(b / "results")],
                          capture_output=True, text=True)


def test_the_smoke_preset_through_the_profile_equals_the_local_run(cluster_run, local_run):
    workdir, run = cluster_run
    out = run.stdout + run.stderr
    # the jobs went to SLURM (each submission names its SLURM job and log), all of them
    assert "has been submitted with SLURM jobid" in out
    assert "(100%) done" in out
    assert (workdir / "results/report/index.html").exists()
    result = compare(local_run(), workdir)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "identical" in result.stdout


def test_the_gpu_rules_request_fits_a_partition_with_gres(cluster, tmp_path):
    """The MCMC posteriors' request, as the profile submits it (its partition for the rule,
    the cost model's memory and time, ``gpu: 1`` as the plugin turns it into ``--gpus``), is
    one SLURM would place on the cluster's GPU partition (``sbatch --test-only``: nothing is
    submitted), and two GPUs are not (the partition's one GRES is what is checked). The
    threads are this node's CPUs: the cost model asks a GPU node for more than this machine
    has."""
    import yaml
    from snakemake_executor_plugin_slurm.utils import set_gres_string

    from postrisk.grid.config import read_config
    from postrisk.planning.planner import Planner
    from postrisk.planning.seeds import known_selections
    from tests.cluster.slurm_cluster import ACCOUNT, node_line

    cpus = int(re.search(r"CPUs=(\d+)", node_line())[1])
    node_size = {"gpu": {"threads": cpus}}
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(yaml.safe_dump({
        "priors": ["bnn", "hbart"], "accelerator": {"use": True},
        "cost_model": {"posterior": {"bnn": node_size, "hbart": node_size}}}))
    cfg = read_config(str(REPO / "presets/smoke.yaml"), str(gpu))
    profile = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())
    checked = 0
    for rule in Planner(cfg, known_selections(cfg)).stage_rules("posterior"):
        if not rule.accelerator:
            continue
        partition = profile["set-resources"][rule.name]["slurm_partition"]
        for job in rule.jobs.values():
            res = job.resources
            assert res.gpu == 1, rule.name
            gres = set_gres_string(_Job({"gpu": res.gpu}))
            cmd = ["sbatch", "--test-only", "-A", ACCOUNT, "-p", partition, *gres.split(),
                   f"--cpus-per-task={res.threads}", f"--mem={res.mem_mb}",
                   f"--time={res.runtime}", "--wrap", "true"]
            test = subprocess.run(cmd, capture_output=True, text=True)
            assert test.returncode == 0, (cmd, test.stderr)
            assert f"in partition {partition}" in test.stderr, test.stderr
            two = [("--gpus=2" if part.startswith("--gpus") else part) for part in cmd]
            assert subprocess.run(two, capture_output=True).returncode != 0
            checked += 1
    assert checked, "no GPU job planned"


class _Job:
    """What the plugin's set_gres_string reads of a job: its resources."""

    def __init__(self, resources: dict):
        self.resources = _Resources(resources)


class _Resources(dict):
    def __getattr__(self, name):
        return self[name]
