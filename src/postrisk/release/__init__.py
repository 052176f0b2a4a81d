"""The released suite (docs/release.md): task stores packed into one checksummed file per
(dataset, prior), a manifest, safe downloads, and loading a task from a release or a store.

- :mod:`~postrisk.release.pack` — the ``release`` rule: pack, checksum, manifest, size limit;
- :mod:`~postrisk.release.croissant` — the instance index and the Croissant metadata;
- :mod:`~postrisk.release.verify` — ``postrisk verify``: a release checked against its draws;
- :mod:`~postrisk.release.download` — ``postrisk download``: fetch and verify with pooch;
- :mod:`~postrisk.release.load` — ``postrisk.load_task`` and ``postrisk.list_tasks``.
"""

from collections.abc import Mapping
from typing import Any

from postrisk.grid.artefacts import artefact

#: The manifest's name inside a release directory (the catalogue's ``release_manifest``).
MANIFEST = artefact("release_manifest").file
#: The instance index and the Croissant metadata (the catalogue's ``release_index``,
#: ``release_croissant``).
INDEX = artefact("release_index").file
CROISSANT = artefact("release_croissant").file
#: What the manifest says it is, and the version of its layout.
MANIFEST_FORMAT = "postrisk-release"
MANIFEST_VERSION = 1
#: The settings of a download, from the config's ``release`` section (config.yaml states their
#: defaults; ``datasets`` and ``priors`` null or absent: all of them).
DOWNLOAD_KEYS = ("base_url", "download_dir", "datasets", "priors", "retries", "timeout_s")


def download_settings(section: Mapping[str, Any] | None, **overrides: Any) -> dict:
    """The download settings of a validated configuration's ``release`` section (see
    ``postrisk.grid.config.read_config``): :data:`DOWNLOAD_KEYS`, ``datasets``/``priors`` None when
    absent, then ``overrides`` (keys of :data:`DOWNLOAD_KEYS`, a command line's options; empty
    ones — None, [], 0 — ignored). A configuration without the section, or without a required
    key, is a ``ConfigError``."""
    from postrisk.grid.config import ConfigError

    if not section:
        raise ConfigError("config key 'release': missing; the downloads' settings are in "
                          "config.yaml's release section")
    missing = [k for k in DOWNLOAD_KEYS if k not in section and k not in ("datasets", "priors")]
    if missing:
        raise ConfigError(f"config key 'release': {missing} missing")
    unknown = sorted(set(overrides) - set(DOWNLOAD_KEYS))
    if unknown:
        raise TypeError(f"download_settings: unknown settings {unknown}")
    return {k: overrides.get(k) or section.get(k) for k in DOWNLOAD_KEYS}


def instances_file(dataset: str, prior: str) -> str:
    """The file holding every released instance of (``dataset``, ``prior``) (the catalogue's
    ``release_instances``)."""
    return artefact("release_instances").file.format(dataset=dataset, prior=prior)


def dataset_file(dataset: str) -> str:
    """The file holding ``dataset``'s per-dataset artefacts (covariates, split, constants; the
    catalogue's ``release_dataset``)."""
    return artefact("release_dataset").file.format(dataset=dataset)


def instance_group(noise: str, coverage: str, seed: int) -> str:
    """An instance's group inside its (dataset, prior) file."""
    return f"{noise}/{coverage}/{int(seed)}"
