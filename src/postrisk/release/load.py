"""Loading tasks from a released suite or from a workflow's task stores (docs/release.md).

>>> import postrisk
>>> postrisk.list_tasks(root="postrisk-data", prior="gp")          # what is here
>>> task = postrisk.load_task("concrete/gp/smooth_monotone/balanced/0", root="postrisk-data")
>>> task.x_train, task.y_train, task.x_eval                         # what a method sees
>>> task.oracle.posterior_var                                       # the ground truth

A *root* is a release directory (a ``manifest.json`` and the packed files ``postrisk
download`` fetched) or a workflow's results directory (``tasks/<dataset>/<prior>/<noise>/
<coverage>/<seed>.zarr``); it may be both, and several roots are searched in order. Without
one, the roots are ``$POSTRISK_DATA``, else the packaged default configuration's
``release.download_dir`` (``resources/release``, where ``postrisk download`` puts a release by
default), then the small suite inside the package (:func:`default_roots`): a key found in both
comes from the first.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import os
import shlex
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from importlib import resources
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
    group, a damaged or incomplete file, digest mismatch); the message names what repairs it."""


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
            try:
                digest, _ = group_sha256(self.path, self.group)
            except (zipfile.BadZipFile, EOFError) as err:
                raise corrupt_file_error(self.path, err) from err
            if digest != self.sha256:
                raise corrupt_file_error(
                    self.path, f"instance {self.group}'s digest {digest[:12]}… differs from "
                               f"the manifest's {self.sha256[:12]}…")
        return open_packed(self.path, self.group)


@functools.cache
def _packaged_download_dir() -> Path:
    from postrisk.grid.config import default_config_path, read_section

    return Path(read_section("release", base=default_config_path())["download_dir"])


def default_root() -> Path:
    """``$POSTRISK_DATA``, else the packaged default configuration's ``release.download_dir``."""
    return Path(os.environ.get(DATA_ENV) or _packaged_download_dir())


def embedded_root() -> Path:
    """The folder of the suite inside the package (``postrisk.get_task``)."""
    return Path(str(resources.files("postrisk") / "data" / "suite"))


#: A root or several (searched in order); None: :func:`default_roots`.
Roots = str | Path | Sequence[str | Path] | None


def default_roots() -> list[Path]:
    """The roots searched without one: :func:`default_root`, then the suite inside the
    package."""
    return [default_root(), embedded_root()]


def search_roots(root: Roots) -> list[Path]:
    """The folders a lookup searches, in order (:data:`Roots`)."""
    if root is None:
        roots = default_roots()
    elif isinstance(root, str | Path):
        roots = [Path(root)]
    else:
        roots = [Path(r) for r in root]
    if not roots:
        raise ValueError("no root to look tasks up in")
    return list(dict.fromkeys(roots))


def configured_root(root: str | Path | None = None,
                    configfiles: Iterable[str | Path] | None = None) -> Roots:
    """Where a command looks tasks up: ``root`` alone where given; else ``$POSTRISK_DATA``
    (None, which :func:`load_task` reads as :func:`default_roots`), else the
    ``release.download_dir`` of the configuration ``postrisk.grid.config.read_config(
    *configfiles)`` (where ``postrisk download`` puts a release), each followed by the suite
    inside the package."""
    if root is not None or os.environ.get(DATA_ENV):
        return root
    from postrisk.grid.config import read_section
    from postrisk.release import download_settings

    release = read_section("release", *(configfiles or ()))
    return [Path(download_settings(release)["download_dir"]), embedded_root()]


def _release_url_configured() -> bool:
    """Whether the configuration ``postrisk download`` reads (``./config.yaml``, else the
    packaged defaults) sets ``release.base_url``, so the command needs no ``--url``."""
    try:
        from postrisk.grid.config import read_section

        return bool(read_section("release").get("base_url"))
    except (ValueError, OSError, KeyError):  # a broken config.yaml: say --url
        return False


def download_command(dest: str | Path, dataset: str | None = None,
                     prior: str | None = None) -> str:
    """The ``postrisk download`` command that fetches (``dataset``, ``prior``)'s files (None:
    every file) into ``dest``; with ``--url <release URL>`` when no ``release.base_url`` is
    configured (:func:`_release_url_configured`). Files already there and valid are skipped,
    any other is fetched again."""
    parts = ["postrisk download"]
    if not _release_url_configured():
        parts.append("--url <release URL>")
    parts += [f"--dataset {shlex.quote(dataset)}"] if dataset else []
    parts += [f"--prior {shlex.quote(prior)}"] if prior else []
    parts.append(f"--dest {shlex.quote(str(dest))}")
    return " ".join(parts)


def _file_condition(path: Path) -> tuple[str | None, str | None]:
    """The (dataset, prior) of a packed instance file: from the manifest beside it, else from
    its name ``<dataset>_<prior>.zip``."""
    if (path.parent / MANIFEST).is_file():
        try:
            for entry in read_manifest(path.parent)["files"]:
                if entry["name"] == path.name:
                    return entry.get("dataset"), entry.get("prior")
        except (ValueError, KeyError, TypeError):  # a damaged manifest: the name says it
            pass
    dataset, sep, prior = path.stem.rpartition("_")
    return (dataset, prior) if sep and dataset and prior else (None, None)


def corrupt_file_error(path: str | Path, why: BaseException | str) -> ReleaseError:
    """The error for a packed file that cannot be read or does not match its manifest (a
    truncated or damaged download): it names the file and the download that repairs it (which
    fetches again every file whose sha256 differs from the manifest's)."""
    path = Path(path)
    dataset, prior = _file_condition(path)
    return ReleaseError(
        f"{path} is damaged or incomplete ({why}); download it again: "
        f"`{download_command(path.parent, dataset, prior)}` (it fetches again every file whose "
        "sha256 differs from the manifest's)")


def read_manifest(root: str | Path) -> dict:
    """A release directory's manifest, checked for its format and version."""
    path = Path(root) / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"no release manifest at {path}; download one with "
                                f"`{download_command(path.parent)}`") from None
    except json.JSONDecodeError as err:
        raise ReleaseError(f"{path} is not JSON ({err}); download it again: "
                           f"`{download_command(path.parent)}`") from err
    if not isinstance(manifest, dict):
        raise ReleaseError(f"{path} is not a postrisk release manifest (a JSON "
                           f"{type(manifest).__name__}, not an object); download it again: "
                           f"`{download_command(path.parent)}`")
    if manifest.get("format") != MANIFEST_FORMAT:
        raise ReleaseError(f"{path} is not a postrisk release manifest "
                           f"(format {manifest.get('format')!r})")
    if manifest.get("manifest_version") != MANIFEST_VERSION:
        raise ReleaseError(f"{path}: manifest version {manifest.get('manifest_version')!r}; this "
                           f"postrisk reads version {MANIFEST_VERSION}. Update postrisk.")
    return manifest


def _close(store) -> None:
    """Close a zarr ZipStore, which cannot be closed before it opened its zip (its ``close``
    then raises AttributeError over the real error)."""
    if getattr(store, "_is_open", False):
        store.close()


def open_packed(path: str | Path, group: str) -> Task:
    """The task of instance ``group`` in the packed file ``path``, loaded and validated. A file
    that is no zip (truncated, overwritten) or whose members fail their CRC is a
    :class:`ReleaseError` naming the file and the download that repairs it
    (:func:`corrupt_file_error`)."""
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
        except (zipfile.BadZipFile, EOFError) as err:
            raise corrupt_file_error(path, err) from err
    finally:
        _close(store)
    return Task(validate_store(ds, kind="task"))


# -- looking tasks up -------------------------------------------------------------------------

def _store_key(store: Path, tasks_dir: Path) -> TaskKey | None:
    parts = store.relative_to(tasks_dir).with_suffix("").parts
    try:
        return TaskKey.parse("/".join(parts))
    except ValueError:
        return None


#: The key fields that are names (the seed is a number).
NAME_FIELDS = KEY_COLUMNS[:-1]
_NAME = {"dataset": "dataset", "prior": "prior", "noise": "noise mode", "coverage": "coverage",
         "seed": "seed"}
_PLURAL = {field: f"{name}s" for field, name in _NAME.items()}


@functools.cache
def _vocabulary(field: str) -> tuple[str, ...]:
    """The names postrisk knows for a key field (the task datasets of the registry, the
    grid's priors, noise modes and coverages)."""
    if field == "dataset":
        from postrisk.covariates.registry import task_datasets

        return tuple(task_datasets())
    from postrisk.grid import vocabulary

    return {"prior": vocabulary.PRIORS, "noise": vocabulary.NOISE_MODES,
            "coverage": vocabulary.COVERAGES}[field]


def _known_name(field: str, value) -> bool:
    """Whether ``value`` is a name postrisk knows for ``field`` (a seed: an integer ≥ 0)."""
    if field == "seed":
        return _as_seed(value) is not None
    return value in _vocabulary(field)


def _as_seed(value) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        seed = int(value)
    except (TypeError, ValueError):
        return None
    return seed if seed >= 0 and str(seed) == str(value).strip() else None


@dataclass
class _Here:
    """What a root holds: the available tasks, and the keys its release manifest names."""

    root: Path
    entries: dict[TaskKey, TaskEntry]
    released: dict[TaskKey, dict]  # the manifest's instances, file here or not
    not_shipped: dict[TaskKey, str]  # the manifest's instances not shipped: why
    manifest: bool
    # what each root searched holds apart (:func:`_scan_roots`; one root: empty)
    parts: list[_Here] = dataclasses.field(default_factory=list)

    def keys(self) -> set[TaskKey]:
        """Every key named here (available, released or not shipped)."""
        return self.held() | set(self.not_shipped)

    def held(self) -> set[TaskKey]:
        """The keys available here or released (downloaded or not)."""
        return set(self.entries) | set(self.released)

    def names(self, field: str) -> set:
        return {getattr(k, field) for k in self.keys()}


def _scan(root: Path) -> _Here:
    entries: dict[TaskKey, TaskEntry] = {}
    released: dict[TaskKey, dict] = {}
    not_shipped: dict[TaskKey, str] = {}
    manifest = (root / MANIFEST).exists()
    if manifest:
        content = read_manifest(root)
        for inst in content["instances"]:
            key = TaskKey.parse(inst["key"])
            released[key] = inst
            path = root / inst["file"]
            if path.is_file():
                entries.setdefault(key, TaskEntry(key, "release", path, inst["group"],
                                                  inst["sha256"]))
        for item in content.get("not_shipped", []):
            not_shipped[TaskKey.parse(item["key"])] = item.get("reason", "")
    tasks_dir = root / TEMPLATES["task"].split("/", 1)[0]
    if tasks_dir.is_dir():
        for store in sorted(tasks_dir.glob("*/*/*/*/*.zarr")):
            key = _store_key(store, tasks_dir)
            if key is not None:
                entries.setdefault(key, TaskEntry(key, "store", store))
    return _Here(root, entries, released, not_shipped, manifest)


def _scan_roots(roots: list[Path]) -> _Here:
    """What ``roots`` hold together, the first root's task where several hold one key."""
    heres = [_scan(r) for r in roots]
    merged = _Here(roots[0], {}, {}, {}, any(h.manifest for h in heres))
    for here in heres:
        for part in ("entries", "released", "not_shipped"):
            into = getattr(merged, part)
            for key, value in getattr(here, part).items():
                into.setdefault(key, value)
    merged.parts = heres
    return merged


def _wanted(filters: dict) -> dict[str, set]:
    """Each given filter as a set of values (seeds as integers where they are ones)."""
    out = {}
    for name, wanted in filters.items():
        if wanted is None:
            continue
        values = {wanted} if isinstance(wanted, str | int) else set(wanted)
        if name == "seed":
            values = {s if (s := _as_seed(v)) is not None else v for v in values}
        out[name] = values
    return out


def _suggest(field: str, value, here: _Here) -> list[str]:
    """Close names for a misspelt ``value``: among what the root holds, else postrisk's."""
    if field == "seed":
        return []
    for pool in (sorted(map(str, here.names(field))), list(_vocabulary(field))):
        close = difflib.get_close_matches(str(value), pool, n=3, cutoff=0.6)
        if close:
            return close
    return []


def _pool_text(field: str, here: _Here) -> str:
    names = sorted(here.names(field), key=lambda v: (isinstance(v, str), v))
    if names:
        return f"{_PLURAL[field]} here: {', '.join(map(str, names))}"
    if field == "seed":
        return "seeds are integers from 0"
    return f"no tasks here; postrisk's {_PLURAL[field]}: {', '.join(_vocabulary(field))}"


def _check_names(here: _Here, wanted: dict[str, set], key: TaskKey | None = None) -> None:
    """A LookupError for every wanted name that is neither under the root nor one postrisk
    knows, with "did you mean" (the corrected ``key``, when one is given)."""
    problems = []
    for field in KEY_COLUMNS:
        present = here.names(field)
        for value in sorted(wanted.get(field, ()), key=str):
            if value not in present and not _known_name(field, value):
                problems.append((field, value, _suggest(field, value, here)))
    if not problems:
        return
    named = " and ".join(f"{_NAME[field]} {value!r}" for field, value, _ in problems)
    text = (f"no {named} under {here.root}, and postrisk knows no "
            f"{'such name' if len(problems) == 1 else 'such names'}")
    if key is not None and all(close for _, _, close in problems):
        fixed = {field: close[0] for field, _, close in problems}
        text += f"; did you mean {replace(key, **fixed).label}?"
    else:
        for field, _, close in problems:
            if close:
                text += f"; did you mean {_NAME[field]} {' or '.join(map(repr, close))}?"
    pools = dict.fromkeys(field for field, _, _ in problems)
    raise LookupError(text + " (" + "; ".join(_pool_text(f, here) for f in pools) + ")")


def list_tasks(root: Roots = None, *, dataset: str | Iterable[str] | None = None,
               prior: str | Iterable[str] | None = None,
               noise: str | Iterable[str] | None = None,
               coverage: str | Iterable[str] | None = None,
               seed: int | Iterable[int] | None = None) -> list[TaskEntry]:
    """The tasks available under ``root`` (see the module docstring), filtered by key fields
    (each a value or a collection of values), sorted by key. A key found both in a release and
    as a store is listed once, from the release. A manifest instance whose file is not here
    (a filtered download) is not listed.

    A filter value is checked before anything is listed: a name held under ``root`` (by a task
    here, or by an instance the release manifest names, downloaded or not) or one postrisk
    knows (the registry's task datasets, the grid's priors, noise modes and coverages; a seed:
    any integer ≥ 0) is valid, and one with no task here simply matches nothing — the result
    may be ``[]``. Any other value (a misspelling: ``dataset="concret"``) is a
    ``LookupError`` with "did you mean …" from the names held under ``root`` (else postrisk's)
    and the names held there.
    """
    filters = dict(dataset=dataset, prior=prior, noise=noise, coverage=coverage, seed=seed)
    here = _scan_roots(search_roots(root))
    wanted = _wanted(filters)
    _check_names(here, wanted)
    found = [e for k, e in here.entries.items()
             if all(getattr(k, name) in values for name, values in wanted.items())]
    return sorted(found, key=lambda e: (e.key.dataset, e.key.prior, e.key.noise,
                                        e.key.coverage, e.key.seed))


def _nearest(key: TaskKey, keys: set[TaskKey]) -> str:
    """What ``keys`` hold where ``key`` first departs from them: "; it holds priors bnn, gp for
    concrete"."""
    for i, field in enumerate(KEY_COLUMNS):
        prefix = KEY_COLUMNS[:i]
        same = [k for k in keys if all(getattr(k, f) == getattr(key, f) for f in prefix)]
        values = {getattr(k, field) for k in same}
        if getattr(key, field) not in values:
            if not values:
                return ""
            held = ", ".join(str(v) for v in sorted(values))
            where = "/".join(str(getattr(key, f)) for f in prefix)
            return f"; it holds {_PLURAL[field]} {held}" + (f" for {where}" if where else "")
    return ""


def _absent(key: TaskKey, here: _Here) -> str:
    """Why the valid key ``key`` is not under the root, and what to do about it."""
    root = here.root
    fetch = f"`{download_command(root, key.dataset, key.prior)}`"
    if not _release_url_configured():  # no release at a configured address: say so
        fetch += " (no release URL is configured in release.base_url: pass a release's address)"
    head = f"task {key.label} is not under {root}"
    if not root.exists():
        return (f"{head}: there is no such folder. Download the release into it ({fetch}), "
                "or name the folder that holds it (root=…, --root …)")
    nearest = _nearest(key, here.held())
    if here.manifest:
        if key in here.released:
            return (f"{head}: it is in the release there, but its file "
                    f"{here.released[key]['file']} was not downloaded (a download of other "
                    f"datasets or priors); download it: {fetch}")
        if key in here.not_shipped:
            why = here.not_shipped[key]
            return f"{head}: the release there does not ship it{': ' + why if why else ''}{nearest}"
        stores = " nor its task stores" if any(e.source == "store"
                                                 for e in here.entries.values()) else ""
        return f"{head}: the release there{stores} holds no such task{nearest}"
    if here.entries:
        return (f"{head}: it is not among the task stores there{nearest}; the released suite "
                f"may hold it: {fetch}")
    return (f"{head}: there are no tasks there (no release manifest, no task stores); download "
            f"the release: {fetch}")


def _also_searched(key: TaskKey, here: _Here) -> str:
    """The roots searched after the first, and what each holds nearest ``key``."""
    parts = []
    for other in here.parts[1:]:
        held = set(other.entries)
        what = ("the suite inside the package" if other.root == embedded_root()
                else str(other.root))
        nearest = _nearest(key, held).removeprefix("; ")
        parts.append(f"{what} ({nearest})" if nearest and held else what)
    return f". Also searched: {'; '.join(parts)}" if parts else ""


def store_family(path: str | Path) -> str:
    """The task family of the store at ``path``: its ``family`` attribute (a store without one
    is a regression store, as every store before the classification family was)."""
    import zarr

    try:
        attrs = zarr.open_group(str(path), mode="r").attrs
    except Exception as err:  # noqa: BLE001 - a store that does not open says so below
        raise FileNotFoundError(f"no readable task store at {path}: {err}") from None
    return str(attrs.get("family", "regression"))


def open_store(path: str | Path):
    """The task in the store at ``path``, opened by its family's task class (the families'
    registry, :class:`postrisk.grid.study.TaskFamily`): a regression :class:`Task`, or
    another family's (a classification task)."""
    from postrisk.grid.study import family, resolve

    name = store_family(path)
    if name == "regression":
        return Task.load(path)
    try:
        task_class = resolve(family(name).task)
    except KeyError as err:
        raise ValueError(f"{path}: a store of the task family {name!r}, which this version "
                         f"of postrisk does not know ({err})") from None
    return task_class.load(path)


def load_task(path_or_key: str | Path | TaskKey, root: Roots = None, *,
              verify: bool = False) -> Task:
    """A task from a packed release or a plain store alike.

    ``path_or_key``: a task store directory (``…/0.zarr``, of any task family: a
    classification store opens as a classification task); an instance inside a packed file
    (``…/concrete_gp.zip/smooth_monotone/balanced/0``); or a key (``"concrete/gp/
    smooth_monotone/balanced/0"`` or a :class:`TaskKey`), looked up under ``root``
    (:func:`list_tasks`). ``verify``: check a packed instance's digest against the manifest.

    A key with a name that is neither under ``root`` nor one postrisk knows is a
    ``LookupError`` with "did you mean <the corrected key>?" (:func:`list_tasks`); a valid key
    with no task under ``root`` is a ``LookupError`` saying why — the release there does not
    hold it (and what it holds nearest), does not ship it (and why), or holds it in a file not
    downloaded, or there is nothing there — with the ``postrisk download`` command that fetches
    it only where downloading can. A corrupt packed file is a :class:`ReleaseError`
    (:func:`corrupt_file_error`).
    """
    if not isinstance(path_or_key, TaskKey):
        text = str(path_or_key).replace("\\", "/")
        if ".zip/" in text:
            file, group = text.split(".zip/", 1)
            return open_packed(file + ".zip", group.strip("/"))
        path = Path(path_or_key)
        if path.is_dir():
            return open_store(path)
        if path.suffix == ".zip":
            raise ValueError(f"{path} is a packed file of many instances: name one inside it, "
                             f"e.g. {path}/smooth_monotone/balanced/0")
        if path.suffix == ".zarr":
            raise FileNotFoundError(f"no task store at {path}")
        key = TaskKey.parse(text)
    else:
        key = path_or_key
    here = _scan_roots(search_roots(root))
    _check_names(here, {f: {v} for f, v in key.as_dict().items()}, key)
    entry = here.entries.get(key)
    if entry is None:
        raise LookupError(_absent(key, here.parts[0]) + _also_searched(key, here))
    return entry.load(verify=verify)
