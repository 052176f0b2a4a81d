"""The small suite inside the package (docs/release.md, "The suite inside the package"):
``postrisk.get_task(key)`` right after ``pip install postrisk``, with no download.

A few Concrete instances per prior, at the paper's posterior settings except the number of
draws, which is thinned so that the whole suite is a few MB: a released suite in the package's
``data/suite`` folder (its manifest, packed files, index and Croissant metadata), loaded as
:func:`postrisk.load_task` loads any release, into the same :class:`~postrisk.tasks.task.Task`.

:func:`thin_task` makes an instance small: it keeps an evenly spaced subset of each chain's
draws (whole chains where a chain is short, as HBART's four draws per chain are), recomputes the
per-point diagnostics from the draws it keeps (so ``postrisk verify`` passes), and keeps the
posterior mean and variance of all the draws — the oracle's best estimates, the same as the
full suite's — saying so in the attribute ``thinned``. ``make embedded-suite`` builds it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from postrisk.release.load import embedded_root
from postrisk.tasks.key import TaskKey
from postrisk.tasks.store import CONTENT_DIGESTS, with_content_digests

#: Draws kept per instance in the package's suite; BNN keeps more, so that its 4 chains' R̂
#: stays the one that decided the seed's validity (a few hundred draws per chain).
EMBEDDED_DRAWS = 200
DRAWS_PER_PRIOR = {"gp": EMBEDDED_DRAWS, "hbart": EMBEDDED_DRAWS, "bnn": 500}
#: The fewest draws per chain a chain keeps (split-R̂ needs 4).
MIN_PER_CHAIN = 4


def embedded_keys() -> list[str]:
    """The keys of the instances the package ships."""
    from postrisk.release.load import list_tasks

    return [entry.label for entry in list_tasks(root=embedded_root())]


def get_task(key: str | TaskKey, verify: bool = False):
    """The instance ``key`` of the suite inside the package (no download). A key the package
    does not ship is a ``LookupError`` listing those it does and saying how to get the full
    suite."""
    from postrisk.release.load import load_task

    label = key.label if isinstance(key, TaskKey) else str(key).strip("/")
    keys = embedded_keys()
    if label not in keys:
        raise LookupError(
            f"{label!r} is not in the small suite inside the package; it holds "
            f"{', '.join(keys)}. The full suite: `postrisk download --url <release URL> "
            f"--dest postrisk-data`, then postrisk.load_task({label!r}, root='postrisk-data')")
    return load_task(label, root=embedded_root(), verify=verify)


def kept_draws(n_draws: int, chains: int, draws: int) -> tuple[np.ndarray, int]:
    """(indices, chains) of about ``draws`` draws kept of ``n_draws`` chain-major draws in
    ``chains`` chains: every chain thinned evenly where each keeps ≥ MIN_PER_CHAIN draws, else
    the first whole chains (at least 2)."""
    per_chain = n_draws // chains
    if draws >= n_draws:
        return np.arange(n_draws), chains
    if chains > 1 and draws // chains < MIN_PER_CHAIN:
        keep_chains = min(max(draws // per_chain, 2), chains)
        return np.arange(keep_chains * per_chain), keep_chains
    keep = max(draws // chains, 1)
    within = np.linspace(0, per_chain - 1, keep).round().astype(int)
    return (np.arange(chains)[:, None] * per_chain + within[None, :]).ravel(), chains


def thin_task(ds, draws: int = EMBEDDED_DRAWS):
    """A copy of the task store ``ds`` (an xarray Dataset) with about ``draws`` posterior draws
    and its per-point diagnostics recomputed from them; the posterior mean and variance stay
    those of all the draws."""
    from postrisk.tasks.diagnostics import instance_point_checks, loglik_rank

    chains = int(ds.attrs.get("chains", 1))
    n_draws = ds.sizes["draw"]
    index, new_chains = kept_draws(n_draws, chains, draws)
    out = ds.isel(draw=index).copy()
    stored = out["posterior_draws"].values
    checks = instance_point_checks(stored.astype(np.float64), out["f_true_eval"].values,
                                   new_chains, rhat_draws=stored)
    for name, values in checks.items():
        out[name] = (("eval",), values.astype(ds[name].dtype) if name in ds else values)
    if "posterior_draws_train" in out:
        out.attrs["rank_loglik"] = loglik_rank(out["posterior_draws_train"].values,
                                               out["f_true_train"].values, out["y_train"].values,
                                               out["noise_var_train"].values)
    out.attrs["chains"] = new_chains
    out.attrs["thinned"] = json.dumps({"from_draws": int(n_draws), "from_chains": chains,
                                       "draws": len(index), "chains": new_chains,
                                       "posterior_mean_and_var": "of all the draws"})
    return with_content_digests(out) if CONTENT_DIGESTS in ds.attrs else out


def build_embedded_suite(results: str | Path, out: str | Path,
                         draws: dict[str, int] | None = None,
                         documents: tuple[Path, ...] = ()) -> dict:
    """Pack the valid instances of a finished run's ``results`` (its ``checks/instances.csv``
    and task stores; the paper-settings slice's) into ``out``, each thinned
    (:func:`thin_task`; draws per prior from ``draws``, default :data:`DRAWS_PER_PRIOR`), as a
    release (:func:`postrisk.release.pack.build_release`); return its manifest. Each
    instance's cell R̂ is its thinned BNN instance's, which the release then records."""
    import shutil
    import tempfile

    import pandas as pd

    from postrisk.core.io import open_zarr, write_zarr_atomic
    from postrisk.grid.paths import path
    from postrisk.release.pack import build_release, release_instances

    results, out = Path(results), Path(out)
    draws = {**DRAWS_PER_PRIOR, **(draws or {})}
    table = pd.read_csv(results / "checks" / "instances.csv")
    table = table[table["valid"].astype(bool)]
    keys = [TaskKey(r.dataset, r.prior, r.noise, r.coverage, int(r.seed))
            for r in table.itertuples()]
    if not keys:
        raise ValueError(f"{results}: no valid instance in checks/instances.csv")
    with tempfile.TemporaryDirectory() as tmp:
        stores = {}
        for key in keys:
            ds = open_zarr(path("task", str(results), **key.as_dict()))
            stores[key] = write_zarr_atomic(thin_task(ds, draws[key.prior]),
                                            Path(tmp) / f"{key.label.replace('/', '_')}.zarr")
        # the release's own rule, its cell R̂ read from the (thinned) BNN stores
        offered = release_instances(table, stores.__getitem__)
        datasets = sorted({k.dataset for k in keys})
        shutil.rmtree(out, ignore_errors=True)
        return build_release(
            offered, {d: Path(path("covariates", str(results), dataset=d)) for d in datasets},
            {(k.dataset, k.prior): Path(path("prior", str(results), dataset=k.dataset,
                                             prior=k.prior)) for k in keys},
            out, documents=list(documents), scale="embedded")


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="pack the package's small suite from a "
                                                 "finished run's results (make embedded-suite)")
    parser.add_argument("results", help="a results folder (the paper-settings slice's)")
    parser.add_argument("out", nargs="?", default=str(embedded_root()))
    parser.add_argument("--document", action="append", default=[], type=Path)
    args = parser.parse_args(argv)
    manifest = build_embedded_suite(args.results, args.out, documents=tuple(args.document))
    size = sum(f["bytes"] for f in manifest["files"])
    print(f"{len(manifest['instances'])} instances, {size / 1e6:.1f} MB in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
