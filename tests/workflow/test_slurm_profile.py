"""A SLURM run's account and partitions are checked before anything is submitted
(postrisk.workflow.slurm, called by rules/common.smk): an unset SLURM_ACCOUNT no longer reaches
sbatch as the literal ``${SLURM_ACCOUNT}``."""

import os
import re
import stat

import pytest
import yaml

from postrisk.workflow.slurm import (
    raw_resources,
    resolve,
    slurm_message,
    slurm_problems,
    targets_slurm,
)
from tests.workflow_helpers import REPO, snakemake

PROFILE = REPO / "profiles" / "slurm"
UNSET = "SLURM_ACCOUNT is not set: export SLURM_ACCOUNT=<your account> or edit " \
        "profiles/slurm/config.yaml"


def _profile():
    """The shipped profile's resources as written (Snakemake hands them on unevaluated)."""
    profile = yaml.safe_load((PROFILE / "config.yaml").read_text())
    return profile["default-resources"], profile.get("set-resources", {})


def test_the_shipped_profile_without_slurm_account_is_one_message_saying_what_to_set():
    default, per_rule = _profile()
    assert targets_slurm(None, default, per_rule)
    problems = slurm_problems(default, per_rule, environ={})
    assert problems == [UNSET]
    assert slurm_message(problems) == UNSET + " (nothing was submitted)"


CASES = [
    # unset: the profile's default-resources name no account
    ("unset", {"slurm_partition": "cpu"}, {"SLURM_ACCOUNT": "abc"},
     "slurm_account is not set: run with --profile profiles/slurm"),
    # the literal ${SLURM_ACCOUNT}: the variable is not exported
    ("literal", {"slurm_account": "${SLURM_ACCOUNT}", "slurm_partition": "cpu"}, {}, UNSET),
    ("literal $NAME", {"slurm_account": "$SLURM_ACCOUNT", "slurm_partition": "cpu"}, {}, UNSET),
    # empty: exported but empty (the plugin would guess an account), or written empty
    ("empty variable", {"slurm_account": "${SLURM_ACCOUNT}", "slurm_partition": "cpu"},
     {"SLURM_ACCOUNT": ""}, "SLURM_ACCOUNT is empty: export SLURM_ACCOUNT=<your account>"),
    ("empty value", {"slurm_account": "", "slurm_partition": "cpu"}, {},
     "slurm_account is empty (default-resources): set it to <your account> in "
     "profiles/slurm/config.yaml"),
    ("no partition", {"slurm_account": "abc"}, {},
     "slurm_partition is not set: run with --profile profiles/slurm"),
    ("both missing", {}, {}, "slurm_account and slurm_partition are not set"),
]


@pytest.mark.parametrize("case, default, environ, expected", CASES,
                         ids=[case[0] for case in CASES])
def test_an_account_or_partition_that_does_not_resolve_is_named(case, default, environ,
                                                                expected):
    [problem] = slurm_problems(default, {}, environ)
    assert problem.startswith(expected), (case, problem)


def test_a_resolved_account_and_partitions_pass():
    default, per_rule = _profile()
    assert slurm_problems(default, per_rule, environ={"SLURM_ACCOUNT": "proj-42"}) == []
    assert slurm_message([]) is None
    # as Snakemake evaluates a value: variables expanded, a quoted string unquoted
    assert resolve("${SLURM_ACCOUNT}", {"SLURM_ACCOUNT": "proj-42"}) == ("proj-42", [], [])
    assert resolve("'gpu'", {}) == ("gpu", [], [])
    assert resolve(12345, {}) == ("12345", [], [])
    assert slurm_problems({"slurm_account": 12345, "slurm_partition": "'cpu'"}, {}, {}) == []


def test_a_rules_partition_is_checked_too():
    per_rule = {"posterior_mcmc": {"slurm_partition": "${GPU_PARTITION}"},
                "fit": {"slurm_partition": ""}, "score": {"mem_mb": 0}}
    problems = slurm_problems({"slurm_account": "abc", "slurm_partition": "cpu"}, per_rule, {})
    assert problems == [
        "GPU_PARTITION is not set: export GPU_PARTITION=<partition> or edit "
        "profiles/slurm/config.yaml",
        "slurm_partition is empty (set-resources of fit): set it to <partition> in "
        "profiles/slurm/config.yaml"]


def test_which_runs_target_slurm():
    """The executor once the workflow knows it; before (parse time, dry runs), the slurm
    resources of the profile; a local run's resources are not checked."""
    default, per_rule = _profile()
    assert targets_slurm("slurm", {}, {})
    assert not targets_slurm("local", default, per_rule)
    assert targets_slurm(None, default, per_rule)
    assert targets_slurm(None, {"mem_mb": 1000}, per_rule)
    assert not targets_slurm(None, {"mem_mb": 1000, "tmpdir": "/tmp"}, {})


def test_raw_resources_are_the_values_as_written():
    class Resource:  # Snakemake's: the expression as written is its `raw`
        def __init__(self, raw):
            self.raw = raw

    assert raw_resources({"slurm_account": Resource("${SLURM_ACCOUNT}"), "x": 3}) == {
        "slurm_account": "${SLURM_ACCOUNT}", "x": 3}
    assert raw_resources(None) == {}


def _fake_slurm(tmp_path):
    """SLURM's commands on PATH: each records its call; sbatch fails (nothing may reach it)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.log"
    for tool in ("sinfo", "squeue", "scontrol", "sacct", "sacctmgr", "sshare", "sbatch"):
        script = bin_dir / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> {calls}\n'
                          + ("exit 1\n" if tool == "sbatch" else "exit 0\n"))
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}, calls


@pytest.mark.workflow
@pytest.mark.slow
@pytest.mark.parametrize("args, expected", [
    (["--profile", str(PROFILE), "-n"], UNSET),
    (["--profile", str(PROFILE)], UNSET),
    # the executor alone, without the profile (a small preset: the check runs once the DAG is
    # built, before the first job is scheduled)
    (["--executor", "slurm", "--jobs", "1", "--configfile", str(REPO / "presets/smoke.yaml")],
     "slurm_account and slurm_partition are not set: run with --profile profiles/slurm"),
], ids=["profile, dry run", "profile, run", "executor without the profile"])
def test_a_slurm_run_without_an_account_stops_before_submitting(tmp_path, monkeypatch, args,
                                                                 expected):
    """`snakemake --profile profiles/slurm` (and its dry run) without SLURM_ACCOUNT, and the
    slurm executor without the profile: one message saying what to set, exit 1, no job
    submitted (sbatch never called)."""
    monkeypatch.delenv("SLURM_ACCOUNT", raising=False)
    env, calls = _fake_slurm(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    run = snakemake(work, *args, env=env, timeout=300)
    said = run.stderr + run.stdout
    assert run.returncode == 1, said[-3000:]
    assert expected in said and said.count(" not set: ") == 1, said[-3000:]
    assert "sbatch" not in (calls.read_text() if calls.exists() else "")


def _resolved(*args: str):
    """The settings Snakemake resolves from the profile and ``args`` (its own parser)."""
    from snakemake.cli import parse_args

    _, settings = parse_args(["--profile", str(PROFILE), *args])
    return settings


@pytest.mark.parametrize("args, conda", [((), False), (("--sdm", "conda"), True)],
                         ids=["shared environment (default)", "conda"])
def test_the_profiles_two_software_modes_resolve_as_documented(monkeypatch, args, conda):
    """By default the jobs run the submitting Snakemake's Python (no software deployment:
    the checkout's .venv on the shared file system); `--sdm conda` gives each rule its
    environment from workflow/envs/, which exist and are generated from uv.lock."""
    from snakemake_interface_executor_plugins.settings import DeploymentMethod

    from postrisk.planning.cost import env_family

    monkeypatch.setenv("SLURM_ACCOUNT", "proj-42")
    settings = _resolved(*args)
    assert settings.executor == "slurm"
    assert settings.software_deployment_method == ({DeploymentMethod.CONDA} if conda else set())
    assert settings.rerun_incomplete and settings.retries == 1
    assert set(settings.default_resources) >= {"slurm_account", "slurm_partition"}
    assert set(settings.set_resources) == {"posterior_mcmc", "warmup_check_posterior"}
    # the rules' environments: a named one, or their planned rule's (a JAX job's, by device)
    named = {m for smk in (REPO / "rules").glob("*.smk")
             for m in re.findall(r'conda:\s*\n\s*env\("([\w-]+)"\)', smk.read_text())}
    families = named | {env_family(False), env_family(True)}
    assert "core" in named
    assert all((REPO / "workflow/envs" / f"{family}.yaml").exists() for family in families)


def test_a_site_without_accounting_sets_the_plugins_squeue_status_command(monkeypatch):
    monkeypatch.setenv("SLURM_ACCOUNT", "proj-42")
    assert _resolved("--slurm-status-command", "squeue").slurm_status_command == "squeue"
