"""A small release built from in-memory task stores, shared by the release tests (the fixtures
``stores`` and ``release`` of tests/release/conftest.py)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from pathlib import Path

import numpy as np

from postrisk.core.io import open_zarr, write_zarr_atomic
from postrisk.grid.paths import path as path_of
from postrisk.release.pack import ReleaseInstance, build_release
from postrisk.tasks.diagnostics import instance_point_checks
from postrisk.tasks.key import TaskKey
from tests.task_helpers import gp_task

KEYS = [TaskKey("concrete", "gp", "bump", "balanced", 0),
        TaskKey("concrete", "gp", "bump", "ood", 0),
        TaskKey("concrete", "bnn", "bump", "balanced", 0),
        TaskKey("airfoil", "gp", "bump", "balanced", 0)]
DROPPED = TaskKey("concrete", "gp", "bump", "balanced", 1)


def make_store(root: Path, key: TaskKey, edit=None) -> Path:
    """A task store of ``key`` whose diagnostics are those of its draws (``edit``: a function
    changing the dataset before it is written)."""
    path = Path(path_of("task", str(root), **vars(key)))
    seed = 7 + 11 * KEYS.index(key) if key in KEYS else 99
    ds = with_diagnostics(gp_task(n=30, m=20, seed=seed, key=vars(key)).ds, seed,
                          chains=4 if key.prior == "bnn" else 1)
    write_zarr_atomic(edit(ds) if edit else ds, path)
    return path


def with_diagnostics(ds, seed: int, chains: int, draws: int = 200):
    """``ds`` with ``draws`` posterior draws (float32, as stored) and the per-point diagnostics
    task generation records from the float64 draws (R̂ and ESS where there are chains)."""
    rng = np.random.default_rng(seed)
    mean, sd = ds["posterior_mean"].values, np.sqrt(ds["posterior_var"].values)
    full = mean + sd * rng.standard_normal((draws, mean.size))
    stored = full.astype(np.float32)
    checks = instance_point_checks(full, ds["f_true_eval"].values, chains, rhat_draws=stored)
    train = rng.standard_normal((draws, ds.sizes["train"])).astype(np.float32)
    ds = ds.assign(posterior_draws=(("draw", "eval"), stored),
                   posterior_draws_train=(("draw", "train"), train),
                   **{name: (("eval",), values) for name, values in checks.items()})
    ds["rank_true"] = ds["rank_true"].astype(np.int32)
    ds.attrs["chains"] = chains
    return ds


def make_stores(root: Path):
    """Task stores of four instances (and one dropped), a covariate store per dataset (a small
    Zarr group) and prior files."""
    tasks = {key: make_store(root, key) for key in [*KEYS, DROPPED]}
    covariates, priors = {}, {}
    for dataset in ("concrete", "airfoil"):
        covariates[dataset] = root / "covariates" / f"{dataset}.zarr"
        write_zarr_atomic(gp_task(n=10, m=5).ds[["x_train"]], covariates[dataset])
        for prior in ("gp", "bnn"):
            priors[(dataset, prior)] = root / "priors" / dataset / f"{prior}.json"
            priors[(dataset, prior)].parent.mkdir(parents=True, exist_ok=True)
            priors[(dataset, prior)].write_text(json.dumps({"a": 1.5, "prior": prior}))
    return root, tasks, covariates, priors


def cell_rhat(tasks: dict, key: TaskKey) -> float | None:
    """The max R̂ of ``key``'s cell's BNN instance among ``tasks`` (None: there is none)."""
    bnn = TaskKey(key.dataset, "bnn", key.noise, key.coverage, key.seed)
    if bnn not in tasks:
        return None
    return float(open_zarr(tasks[bnn])["rhat"].values.max())


def build(stores, out: Path, **kw) -> dict:
    """The release of ``stores`` in ``out`` (its manifest)."""
    root, tasks, covariates, priors = stores
    offered = [ReleaseInstance(k, tasks[k], cell_rhat=cell_rhat(tasks, k)) for k in KEYS]
    offered.append(ReleaseInstance(DROPPED, tasks[DROPPED], False, "seed 1 is not valid"))
    card = out.parent / "DATA_CARD.md"
    card.write_text("card\n")
    return build_release(offered, covariates, priors, out, documents=[card], scale="smoke",
                         config_digest="abc", **kw)


def same_arrays(packed, plain) -> None:
    assert set(plain.ds.variables) - set(packed.ds.variables) == {"posterior_draws_train"}
    for name in packed.ds.variables:
        np.testing.assert_array_equal(packed.ds[name].values, plain.ds[name].values,
                                      err_msg=name)


class Gate:
    """Held requests of the loopback server: ``arrived`` is set when the first one comes,
    ``open()`` lets them all through."""

    def __init__(self) -> None:
        self.arrived = threading.Event()
        self._open = threading.Event()

    def open(self) -> None:
        self._open.set()


def gate_server(server, suffix: str = ".zip") -> Gate:
    """Make the loopback server hold every request for a ``suffix`` file until the returned
    gate opens (at most 30 s), so that two downloads overlap for sure."""
    gate = Gate()
    base = server.server.RequestHandlerClass

    class Gated(base):
        def do_GET(self):  # noqa: N802 (http.server's name)
            if self.path.endswith(suffix):
                gate.arrived.set()
                gate._open.wait(30)
            super().do_GET()

    server.server.RequestHandlerClass = Gated
    return gate


def wait_for(condition, timeout_s: float = 20.0, what: str = "a condition") -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.02)


def config_with_base_url(folder: Path, url: str | None) -> Path:
    """``folder/config.yaml``: the repository's configuration with ``release.base_url`` set
    (what a user's checkout or working folder holds once a release is published)."""
    repo = Path(__file__).resolve().parents[2]
    text = (repo / "config.yaml").read_text()
    old = "  base_url: null"
    assert text.count(old) == 1
    path = folder / "config.yaml"
    path.write_text(text.replace(old, f"  base_url: {url if url else 'null'}"))
    return path


@contextlib.contextmanager
def served_with_base_url(out: Path, tmp_path: Path, monkeypatch):
    """The release ``out`` served on loopback, the working folder one whose config.yaml sets
    ``release.base_url`` to it (a published release): yields (server, URL)."""
    from tests.http_fixture import FakeSources, serve_files

    with FakeSources() as server:
        url = serve_files(server, out)
        work = tmp_path / "work"
        work.mkdir()
        config_with_base_url(work, url)
        monkeypatch.chdir(work)
        yield server, url
