"""Packing a release (rule ``release``; docs/release.md).

Every valid instance's task store goes, without :data:`~postrisk.tasks.store.RELEASE_OMITTED`,
into one file per (dataset, prior): a Zarr v3 hierarchy inside an uncompressed zip (the chunks
are zstd-compressed already, and a stored member can be read in place), one group
``<noise>/<coverage>/<seed>`` per instance. The store's files are copied byte for byte; only
the instance group's ``zarr.json`` gains the attribute ``released_without``. Each dataset adds
one file of per-dataset artefacts (the paper's App. B.7): its covariate store (processed
covariates, the evaluation/candidate split, the scale constants, shells, PC1 loadings), each
prior's fitted settings (scale constant, kernel hyper-parameters) and the noise
parameters of each mode.

Packing is deterministic — members in sorted order, fixed timestamps and permissions — so the
same stores give the same bytes and the same sha256 on any machine. The manifest lists every
file and every instance (file, group, bytes, sha256, schema and package versions, config
digest, the dataset's licence) and the instances not shipped, with why. The release refuses to
exceed a size and a file-count limit (a Zenodo record holds 50 GB and 100 files).
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from postrisk.core.download import file_sha256
from postrisk.core.io import atomic_output, package_version, write_text_atomic
from postrisk.core.progress import progress_steps
from postrisk.covariates.registry import registry
from postrisk.release import (
    INDEX,
    MANIFEST,
    MANIFEST_FORMAT,
    MANIFEST_VERSION,
    dataset_file,
    instance_group,
    instances_file,
)
from postrisk.release.croissant import index_csv, write_croissant
from postrisk.tasks import TASK_SCHEMA_VERSION
from postrisk.tasks.key import KEY_COLUMNS, TaskKey
from postrisk.tasks.quality import quality_record
from postrisk.tasks.store import RELEASE_OMITTED, validate_store

logger = logging.getLogger(__name__)

#: Every member's timestamp (the zip format's earliest), so packing is reproducible.
ZIP_TIMESTAMP = (1980, 1, 1, 0, 0, 0)
#: A Zenodo record: at most 50 GB and 100 files.
DEFAULT_MAX_BYTES = 50_000_000_000
DEFAULT_MAX_FILES = 100


class ReleaseTooLarge(ValueError):
    """The packed release exceeds its configured size or file-count limit."""


@dataclass(frozen=True)
class ReleaseInstance:
    """One instance offered for release: its key, its task store, whether it is shipped and,
    if not, why; ``cell_rhat``: the max R̂ of its cell's BNN instance, which decided its seed
    (None: no BNN instance in the grid)."""

    key: TaskKey
    store: Path
    valid: bool = True
    reason: str = ""
    cell_rhat: float | None = None


# -- deterministic zip files --------------------------------------------------------------------

class _ZipWriter:
    """Members written in the order given, each with fixed metadata, uncompressed."""

    def __init__(self, path: Path) -> None:
        self.zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED, allowZip64=True)
        self.names: set[str] = set()

    def add(self, name: str, data: bytes) -> None:
        if name in self.names:
            raise ValueError(f"duplicate zip member {name!r}")
        self.names.add(name)
        info = zipfile.ZipInfo(name, date_time=ZIP_TIMESTAMP)
        info.compress_type = zipfile.ZIP_STORED
        info.external_attr = 0o644 << 16
        self.zip.writestr(info, data)

    def add_group(self, prefix: str, attributes: Mapping | None = None) -> None:
        """A Zarr v3 group node at ``prefix`` ("" for the root)."""
        node = {"zarr_format": 3, "node_type": "group", "attributes": dict(attributes or {})}
        self.add(f"{prefix}/zarr.json" if prefix else "zarr.json",
                 (json.dumps(node, indent=2, sort_keys=True) + "\n").encode())

    def close(self) -> None:
        self.zip.close()


def members_sha256(members: Iterable[tuple[str, bytes]]) -> str:
    """The sha256 of a set of named members: of the sorted lines ``<name>\\t<sha256>``. An
    instance's digest in the manifest, recomputable from its group in the zip file."""
    lines = sorted(f"{name}\t{hashlib.sha256(data).hexdigest()}\n" for name, data in members)
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def group_sha256(zip_path: str | Path, group: str) -> tuple[str, int]:
    """The digest (:func:`members_sha256`) and byte size of ``group``'s members in a packed
    file."""
    prefix = group.rstrip("/") + "/"
    with zipfile.ZipFile(zip_path) as zf:
        members = [(name[len(prefix):], zf.read(name)) for name in zf.namelist()
                   if name.startswith(prefix)]
    if not members:
        raise KeyError(f"{zip_path} holds no group {group!r}")
    return members_sha256(members), sum(len(data) for _, data in members)


def _store_members(store: Path) -> list[tuple[str, Path]]:
    """A directory store's files as (relative name, path), sorted; hidden files (Snakemake's
    timestamp) and the variables a release omits are left out."""
    members = []
    for path in sorted(p for p in store.rglob("*") if p.is_file()):
        parts = path.relative_to(store).parts
        if any(part.startswith(".") for part in parts) or parts[0] in RELEASE_OMITTED:
            continue
        members.append(("/".join(parts), path))
    return members


def _released_group_json(data: bytes) -> bytes:
    node = json.loads(data)
    node.setdefault("attributes", {})["released_without"] = json.dumps(list(RELEASE_OMITTED))
    return (json.dumps(node, indent=2) + "\n").encode()


# -- packing ------------------------------------------------------------------------------------

def pack_instances(instances: Sequence[tuple[TaskKey, Path]], out: str | Path,
                   licence: str, cell_rhat: Mapping[TaskKey, float | None] | None = None
                   ) -> list[dict]:
    """Pack the task stores of one (dataset, prior) into ``out``; return one manifest entry per
    instance (key fields, file, group, shapes, bytes, sha256, versions, config digest, licence
    and its quality record, :func:`postrisk.tasks.quality.quality_record`, with its cell's BNN
    R̂ from ``cell_rhat``).

    Each store is validated first (a store that breaks the contract is never released).
    """
    out = Path(out)
    keys = sorted({(k.dataset, k.prior) for k, _ in instances})
    if len(keys) != 1:
        raise ValueError(f"{out.name}: one (dataset, prior) per file, got {keys}")
    dataset, prior = keys[0]
    ordered = sorted(instances, key=lambda item: (item[0].noise, item[0].coverage, item[0].seed))
    entries = []
    with atomic_output(out) as tmp:
        writer = _ZipWriter(tmp)
        try:
            writer.add_group("", {"format": MANIFEST_FORMAT, "dataset": dataset, "prior": prior,
                                  "schema_version": TASK_SCHEMA_VERSION, "licence": licence,
                                  "package_version": package_version()})
            groups: set[str] = set()
            with progress_steps(len(ordered), f"[release] {out.name}", logger) as progress:
                for key, store in ordered:
                    for parent in (key.noise, f"{key.noise}/{key.coverage}"):
                        if parent not in groups:
                            groups.add(parent)
                            writer.add_group(parent)
                    entries.append(_pack_instance(writer, key, Path(store), out.name, licence,
                                                  (cell_rhat or {}).get(key)))
                    progress.advance()
        finally:
            writer.close()
    return entries


def _pack_instance(writer: _ZipWriter, key: TaskKey, store: Path, file: str,
                   licence: str, cell_rhat: float | None) -> dict:
    ds = validate_store(store, kind="task")
    if TaskKey.from_attrs(ds.attrs) != key:
        raise ValueError(f"{store}: holds instance {TaskKey.from_attrs(ds.attrs).label}, "
                         f"expected {key.label}")
    group = instance_group(key.noise, key.coverage, key.seed)
    members = []
    for name, path in _store_members(store):
        data = path.read_bytes()
        if name == "zarr.json":
            data = _released_group_json(data)
        writer.add(f"{group}/{name}", data)
        members.append((name, data))
    versions = json.loads(ds.attrs.get("versions", "{}"))
    return {"key": key.label, "dataset": key.dataset, "prior": key.prior, "noise": key.noise,
            "coverage": key.coverage, "seed": key.seed, "file": file, "group": group,
            "n_train": int(ds.sizes["train"]), "n_eval": int(ds.sizes["eval"]),
            "features": int(ds.sizes["feature"]), "draws": int(ds.sizes["draw"]),
            "chains": int(ds.attrs.get("chains", 1)),
            "bytes": sum(len(data) for _, data in members), "sha256": members_sha256(members),
            "schema_version": ds.attrs["schema_version"],
            "package_version": versions.get("postrisk", "unknown"),
            "config_digest": ds.attrs["config_digest"], "licence": licence,
            "quality": quality_record(ds, cell_rhat)}


def pack_dataset(dataset: str, covariate_store: str | Path, prior_files: Mapping[str, Path],
                 noise_models: Mapping[str, dict], out: str | Path) -> Path:
    """Pack ``dataset``'s per-dataset artefacts into ``out``: ``covariates/`` (the covariate
    store, a Zarr group), ``priors/<prior>.json`` and ``noise_models.json``."""
    out = Path(out)
    with atomic_output(out) as tmp:
        writer = _ZipWriter(tmp)
        try:
            writer.add_group("", {"format": MANIFEST_FORMAT, "dataset": dataset,
                                  "content": "per-dataset artefacts",
                                  "package_version": package_version()})
            for name, path in _store_members(Path(covariate_store)):
                writer.add(f"covariates/{name}", path.read_bytes())
            for prior in sorted(prior_files):
                writer.add(f"priors/{prior}.json", Path(prior_files[prior]).read_bytes())
            writer.add("noise_models.json",
                       (json.dumps(noise_models, indent=2, sort_keys=True) + "\n").encode())
        finally:
            writer.close()
    return out


def noise_models_of(stores: Iterable[Path]) -> dict[str, dict]:
    """The noise parameters of each mode, read from task stores of one dataset (every instance
    of a mode has the same; a disagreement is an error)."""
    from postrisk.core.io import open_zarr

    models: dict[str, dict] = {}
    for store in stores:
        ds = open_zarr(store, load=False)
        mode, model = ds.attrs["noise"], json.loads(ds.attrs["noise_model"])
        if models.setdefault(mode, model) != model:
            raise ValueError(f"{store}: noise model {model} differs from another instance's "
                             f"{models[mode]} for mode {mode!r}")
    return dict(sorted(models.items()))


def build_release(instances: Sequence[ReleaseInstance], covariate_stores: Mapping[str, Path],
                  prior_files: Mapping[tuple[str, str], Path], out_dir: str | Path, *,
                  documents: Sequence[Path] = (), scale: str = "paper",
                  config_digest: str = "", max_bytes: int = DEFAULT_MAX_BYTES,
                  max_files: int = DEFAULT_MAX_FILES, base_url: str | None = None) -> dict:
    """Pack a release into ``out_dir`` and write its manifest; return the manifest.

    ``instances``: every instance built, shipped or not (``valid``); ``covariate_stores``: per
    dataset; ``prior_files``: per (dataset, prior); ``documents``: copied as they are (the data
    card, the citation file). Besides the manifest it writes the instance index
    (``instances.csv``, listed in the manifest) and the Croissant metadata (``croissant.json``,
    which lists the manifest; ``base_url``: where the release will be published, for its
    addresses) — :mod:`postrisk.release.croissant`. Raises :class:`ReleaseTooLarge` — after
    removing what it packed — when the files exceed ``max_bytes`` in all or number more than
    ``max_files``.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    licences = {name: spec.licence for name, spec in registry().items()}
    shipped = [i for i in instances if i.valid]
    by_file: dict[tuple[str, str], list[ReleaseInstance]] = {}
    for item in shipped:
        by_file.setdefault((item.key.dataset, item.key.prior), []).append(item)
    datasets = sorted({d for d, _ in by_file})
    n_files = len(by_file) + len(datasets) + len(documents) + 3  # manifest, index, Croissant
    if n_files > max_files:
        raise ReleaseTooLarge(f"the release would hold {n_files} files, over the limit of "
                              f"{max_files} (config key release.max_files)")
    written: list[Path] = []
    files, entries = [], []
    try:
        for (dataset, prior), items in sorted(by_file.items()):
            path = out_dir / instances_file(dataset, prior)
            entries += pack_instances([(i.key, i.store) for i in items], path,
                                      licences[dataset], {i.key: i.cell_rhat for i in items})
            written.append(path)
            files.append(_file_entry(path, "instances", licences[dataset], dataset=dataset,
                                     prior=prior, instances=len(items)))
        for dataset in datasets:
            path = out_dir / dataset_file(dataset)
            stores = [i.store for i in shipped if i.key.dataset == dataset]
            pack_dataset(dataset, covariate_stores[dataset],
                         {p: f for (d, p), f in prior_files.items() if d == dataset},
                         noise_models_of(stores), path)
            written.append(path)
            files.append(_file_entry(path, "dataset", licences[dataset], dataset=dataset))
        for document in documents:
            path = out_dir / Path(document).name
            shutil.copyfile(document, path)
            written.append(path)
            files.append(_file_entry(path, "document", "see DATA_CARD.md"))
        path = out_dir / INDEX
        write_text_atomic(path, index_csv({"instances": entries}))
        written.append(path)
        files.append(_file_entry(path, "index", "see DATA_CARD.md"))
        total = sum(f["bytes"] for f in files)
        if total > max_bytes:
            sizes = ", ".join(f"{f['name']} {f['bytes']:,}" for f in
                              sorted(files, key=lambda f: -f["bytes"])[:5])
            raise ReleaseTooLarge(f"the packed release is {total:,} bytes, over the limit of "
                                  f"{max_bytes:,} (config key release.max_bytes); largest "
                                  f"files: {sizes}")
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    manifest = {
        "format": MANIFEST_FORMAT, "manifest_version": MANIFEST_VERSION,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "package_version": package_version(), "schema_version": TASK_SCHEMA_VERSION,
        "scale": scale, "config_digest": config_digest, "total_bytes": total,
        "released_without": list(RELEASE_OMITTED),
        "files": files, "instances": entries,
        "not_shipped": [{"key": i.key.label, "dataset": i.key.dataset, "prior": i.key.prior,
                         "noise": i.key.noise, "coverage": i.key.coverage, "seed": i.key.seed,
                         "reason": i.reason} for i in instances if not i.valid],
    }
    write_text_atomic(out_dir / MANIFEST, json.dumps(manifest, indent=2) + "\n")
    write_croissant(out_dir, manifest, documents, base_url)
    logger.info("[release] %d instance(s) in %d file(s), %s bytes (limit %s); %d not shipped; "
                "manifest %s", len(entries), len(files), f"{total:,}", f"{max_bytes:,}",
                len(manifest["not_shipped"]), out_dir / MANIFEST)
    return manifest


def _file_entry(path: Path, kind: str, licence: str, **extra: object) -> dict:
    return {"name": path.name, "kind": kind, **extra, "bytes": path.stat().st_size,
            "sha256": file_sha256(path), "licence": licence}


def release_instances(table, task_store) -> list[ReleaseInstance]:
    """The instances offered for release from the checks' instance table (``checks/
    instances.csv``: one row per built instance with its ``valid`` flag); ``task_store`` maps a
    :class:`TaskKey` to its store. A dropped instance's reason names its cell's BNN R̂."""
    from postrisk.tasks.validity import RHAT_THRESHOLD

    bnn = table[table["prior"] == "bnn"]
    bnn_rhat = {(r.dataset, r.noise, r.coverage, int(r.seed)): float(r.max_rhat)
                for r in bnn.itertuples()}
    out = []
    for row in table.sort_values(list(KEY_COLUMNS)).itertuples():
        key = TaskKey(row.dataset, row.prior, row.noise, row.coverage, int(row.seed))
        reason = ""
        if not bool(row.valid):
            rhat = bnn_rhat.get((key.dataset, key.noise, key.coverage, key.seed))
            if rhat is not None and not rhat <= RHAT_THRESHOLD:
                reason = (f"seed {key.seed} is not valid in its cell: the cell's BNN instance "
                          f"has max R̂ {rhat:.4f} > {RHAT_THRESHOLD}")
            else:
                reason = f"seed {key.seed} is beyond the cell's first valid seeds"
        out.append(ReleaseInstance(key, Path(task_store(key)), bool(row.valid), reason,
                                   _cell_rhat(key, bnn_rhat, task_store)))
    return out


def _cell_rhat(key: TaskKey, table_rhat: dict, task_store) -> float | None:
    """The max R̂ of ``key``'s cell's BNN instance, from its task store (the table's CSV value
    is rounded), or None where the grid has no BNN instance there."""
    cell = (key.dataset, key.noise, key.coverage, key.seed)
    if cell not in table_rhat:
        return None
    from postrisk.core.io import open_zarr

    bnn = TaskKey(key.dataset, "bnn", key.noise, key.coverage, key.seed)
    store = Path(task_store(bnn))
    return float(open_zarr(store)["rhat"].max()) if store.exists() else table_rhat[cell]
