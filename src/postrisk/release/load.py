"""Loading tasks from a released suite or from a workflow's task stores (docs/release.md).

>>> import postrisk
>>> postrisk.list_tasks(root="postrisk-data", prior="gp")          # what is here
>>> task = postrisk.load_task("concrete/gp/smooth_monotone/balanced/0", root="postrisk-data")
>>> task.x_train, task.y_train, task.x_eval                         # what a method sees
>>> task.oracle.posterior_var                                       # the ground truth

A *root* is a release directory (a ``manifest.json`` and the packed files ``postrisk
download`` fetched) or a workflow's results directory (``tasks/<dataset>/<prior>/<noise>/
<coverage>/<seed>.zarr``); it may be both. Without one, the root is ``$POSTRISK_DATA``, else
the packaged default configuration's ``release.download_dir`` (``resources/release``, where
``postrisk download`` puts a release by default).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from postrisk.grid.paths import TEMPLATES
from postrisk.release import MANIFEST, MANIFEST_FORMAT, MANIFEST_VERSION
from postrisk.release.pack import group_sha256
from postrisk.tasks.key import KEY_COLUMNS, TaskKey
from postrisk.tasks.store import validate_store
from postrisk.tasks.task import Task

#: The environment variable naming the default root.
DATA_ENV = "POSTRISK_DATA"
FILTERS = KEY_COLUMNS


class ReleaseError(ValueError):
    """A release directory or packed file that cannot be read as one (bad manifest, missing
    group, digest mismatch)."""


@dataclass(frozen=True)
class TaskEntry:
    """A task available locally: its key and where it is (``source`` "release": ``group`` of
    the packed file ``path``, with the manifest's ``sha256``; "store": the store ``path``)."""

    key: TaskKey
    source: str
    path: Path
    group: str | None = None
    sha256: str | None = None

    @property
    def label(self) -> str:
        return self.key.label

    def load(self, verify: bool = False) -> Task:
        """The task; ``verify`` first checks a packed instance's digest against the
        manifest."""
        if self.source == "store":
            return Task.load(self.path)
        if verify:
            digest, _ = group_sha256(self.path, self.group)
            if digest != self.sha256:
                raise ReleaseError(f"{self.path}/{self.group}: digest {digest} differs from the "
                                   f"manifest's {self.sha256}; download the file again")
        return open_packed(self.path, self.group)


@functools.cache
def _packaged_download_dir() -> Path:
    from postrisk.grid.config import default_config_path, read_config

    return Path(read_config(base=default_config_path())["release"]["download_dir"])


def default_root() -> Path:
    """``$POSTRISK_DATA``, else the packaged default configuration's ``release.download_dir``."""
    return Path(os.environ.get(DATA_ENV) or _packaged_download_dir())


def configured_root(root: str | Path | None = None,
                    configfiles: Iterable[str | Path] | None = None) -> str | Path | None:
    """Where a command looks tasks up: ``root``, else ``$POSTRISK_DATA`` (None, which
    :func:`load_task` reads as that), else the ``release.download_dir`` of the configuration
    ``postrisk.grid.read_config(*configfiles)`` (where ``postrisk download`` puts a release)."""
    if root is not None or os.environ.get(DATA_ENV):
        return root
    from postrisk.grid.config import read_config
    from postrisk.release import download_settings

    release = read_config(*(configfiles or ())).get("release")
    return Path(download_settings(release)["download_dir"])


def read_manifest(root: str | Path) -> dict:
    """A release directory's manifest, checked for its format and version."""
    path = Path(root) / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"no release manifest at {path}; download one with "
                                "`postrisk download --url <release URL>`") from None
    except json.JSONDecodeError as err:
        raise ReleaseError(f"{path} is not JSON ({err}); download it again") from err
    if manifest.get("format") != MANIFEST_FORMAT:
        raise ReleaseError(f"{path} is not a postrisk release manifest "
                           f"(format {manifest.get('format')!r})")
    if manifest.get("manifest_version") != MANIFEST_VERSION:
        raise ReleaseError(f"{path}: manifest version {manifest.get('manifest_version')!r}; this "
                           f"postrisk reads version {MANIFEST_VERSION}. Update postrisk.")
    return manifest


def open_packed(path: str | Path, group: str) -> Task:
    """The task of instance ``group`` in the packed file ``path``, loaded and validated."""
    import xarray as xr
    import zarr

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no packed release file at {path}")
    store = zarr.storage.ZipStore(path, mode="r")
    try:
        try:
            ds = xr.open_zarr(store, group=group, zarr_format=3, consolidated=False).load()
        except (FileNotFoundError, KeyError) as err:
            raise ReleaseError(f"{path} holds no instance {group!r} "
                               "(<noise>/<coverage>/<seed>)") from err
    finally:
        store.close()
    return Task(validate_store(ds, kind="task"))


def _matches(key: TaskKey, filters: dict) -> bool:
    for name, wanted in filters.items():
        if wanted is None:
            continue
        values = {wanted} if isinstance(wanted, str | int) else set(wanted)
        if getattr(key, name) not in ({int(v) for v in values} if name == "seed" else values):
            return False
    return True


def _store_key(store: Path, tasks_dir: Path) -> TaskKey | None:
    parts = store.relative_to(tasks_dir).with_suffix("").parts
    try:
        return TaskKey.parse("/".join(parts))
    except ValueError:
        return None


def list_tasks(root: str | Path | None = None, *, dataset: str | Iterable[str] | None = None,
               prior: str | Iterable[str] | None = None,
               noise: str | Iterable[str] | None = None,
               coverage: str | Iterable[str] | None = None,
               seed: int | Iterable[int] | None = None) -> list[TaskEntry]:
    """The tasks available under ``root`` (see the module docstring), filtered by key fields
    (each a value or a collection of values), sorted by key. A key found both in a release and
    as a store is listed once, from the release. A manifest instance whose file is not here
    (a filtered download) is not listed."""
    root = Path(root) if root is not None else default_root()
    filters = dict(dataset=dataset, prior=prior, noise=noise, coverage=coverage, seed=seed)
    found: dict[TaskKey, TaskEntry] = {}
    if (root / MANIFEST).exists():
        for inst in read_manifest(root)["instances"]:
            key = TaskKey.parse(inst["key"])
            path = root / inst["file"]
            if path.is_file() and _matches(key, filters):
                found.setdefault(key, TaskEntry(key, "release", path, inst["group"],
                                                inst["sha256"]))
    tasks_dir = root / TEMPLATES["task"].split("/", 1)[0]
    if tasks_dir.is_dir():
        for store in sorted(tasks_dir.glob("*/*/*/*/*.zarr")):
            key = _store_key(store, tasks_dir)
            if key is not None and _matches(key, filters):
                found.setdefault(key, TaskEntry(key, "store", store))
    return [found[k] for k in sorted(found, key=lambda k: (k.dataset, k.prior, k.noise,
                                                           k.coverage, k.seed))]


def load_task(path_or_key: str | Path | TaskKey, root: str | Path | None = None, *,
              verify: bool = False) -> Task:
    """A task from a packed release or a plain store alike.

    ``path_or_key``: a task store directory (``…/0.zarr``); an instance inside a packed file
    (``…/concrete_gp.zip/smooth_monotone/balanced/0``); or a key (``"concrete/gp/
    smooth_monotone/balanced/0"`` or a :class:`TaskKey`), looked up under ``root``
    (:func:`list_tasks`). ``verify``: check a packed instance's digest against the manifest.
    """
    if not isinstance(path_or_key, TaskKey):
        text = str(path_or_key).replace("\\", "/")
        if ".zip/" in text:
            file, group = text.split(".zip/", 1)
            return open_packed(file + ".zip", group.strip("/"))
        path = Path(path_or_key)
        if path.is_dir():
            return Task.load(path)
        if path.suffix == ".zip":
            raise ValueError(f"{path} is a packed file of many instances: name one inside it, "
                             f"e.g. {path}/smooth_monotone/balanced/0")
        if path.suffix == ".zarr":
            raise FileNotFoundError(f"no task store at {path}")
        key = TaskKey.parse(text)
    else:
        key = path_or_key
    root = Path(root) if root is not None else default_root()
    entries = list_tasks(root, dataset=key.dataset, prior=key.prior, noise=key.noise,
                         coverage=key.coverage, seed=key.seed)
    if not entries:
        raise LookupError(
            f"task {key.label} is not under {root} (a release directory or a results "
            f"directory). Download it (`postrisk download --dataset {key.dataset} --prior "
            f"{key.prior} --dest {root}`), or see what is there with "
            f"postrisk.list_tasks(root={str(root)!r}).")
    return entries[0].load(verify=verify)
