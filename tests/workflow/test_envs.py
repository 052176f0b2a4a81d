from postrisk.workflow.envs import FAMILIES, render_env, stale_envs


def test_workflow_envs_agree_with_lock(repo):
    assert stale_envs(repo) == [], "run `postrisk envs --write` after changing uv.lock"


def test_env_pins_come_from_the_lock(repo):
    import tomllib

    packages = tomllib.loads((repo / "uv.lock").read_text())["package"]
    lock = {p["name"]: p["version"] for p in packages}
    text = render_env("jax", repo / "uv.lock")
    for name in ("jax", "numpyro", "bartz", "zarr", "snakemake"):
        if name == "snakemake":
            assert "snakemake==" not in text  # the workflow manager runs outside job envs
        else:
            assert f"{name}=={lock[name]}" in text
    assert set(FAMILIES) == {p.stem for p in (repo / "workflow" / "envs").glob("*.yaml")}


def test_light_install_constraints_pin_the_lock_without_extras(repo):
    """requirements/light.txt pins the package's own dependencies at the lock's versions, and
    nothing of an extra (no JAX, no Snakemake)."""
    import tomllib

    from postrisk.workflow.envs import LIGHT_CONSTRAINTS, render_light_constraints

    packages = tomllib.loads((repo / "uv.lock").read_text())["package"]
    lock = {p["name"]: p["version"] for p in packages}
    text = (repo / LIGHT_CONSTRAINTS).read_text()
    assert text == render_light_constraints(repo / "uv.lock")
    pins = dict(line.split("==") for line in text.splitlines() if not line.startswith("#"))
    for name in ("numpy", "zarr", "pooch", "typer", "filelock"):
        assert pins[name] == lock[name]
    assert not {"jax", "snakemake", "catboost", "optuna"} & set(pins)


def test_the_jax_family_holds_every_requirement_of_the_samplers_and_methods(repo):
    """Cluster jobs of priors, posteriors and fits run in the ``jax`` environment: every
    package the ``samplers`` and ``methods`` extras name is in it (a method's new dependency
    that only the developer's virtual environment has would fail on the cluster)."""
    import re
    import tomllib

    from postrisk.workflow.envs import _canonical, _closure, lock_packages

    extras = tomllib.loads((repo / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    wanted = {_canonical(re.split(r"[\[<>=!~; ]", spec, maxsplit=1)[0])
              for extra in ("samplers", "methods") for spec in extras[extra]}
    closure = set(_closure(lock_packages(repo / "uv.lock"), FAMILIES["jax"]))
    assert wanted - closure == set()
