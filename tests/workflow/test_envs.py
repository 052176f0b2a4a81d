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
