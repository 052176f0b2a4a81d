"""The released suite (docs/release.md): task stores packed into one checksummed file per
(dataset, prior), a manifest, safe downloads, and loading a task from a release or a store.

- :mod:`~postrisk.release.pack` — the ``release`` rule: pack, checksum, manifest, size limit;
- :mod:`~postrisk.release.download` — ``postrisk download``: fetch and verify with pooch;
- :mod:`~postrisk.release.load` — ``postrisk.load_task`` and ``postrisk.list_tasks``.
"""

#: The manifest's name inside a release directory.
MANIFEST = "manifest.json"
#: What the manifest says it is, and the version of its layout.
MANIFEST_FORMAT = "postrisk-release"
MANIFEST_VERSION = 1
#: Download settings when no workflow configuration is at hand (``postrisk download`` outside
#: a checkout); the config's ``release`` section overrides them.
DOWNLOAD_DEFAULTS = {"base_url": None, "download_dir": "resources/release", "datasets": None,
                     "priors": None, "retries": 3, "timeout_s": 60}


def download_settings(section: dict | None = None) -> dict:
    """The download settings: :data:`DOWNLOAD_DEFAULTS` updated by a config's ``release``
    section."""
    return {**DOWNLOAD_DEFAULTS, **(section or {})}


def instances_file(dataset: str, prior: str) -> str:
    """The file holding every released instance of (``dataset``, ``prior``)."""
    return f"{dataset}_{prior}.zip"


def dataset_file(dataset: str) -> str:
    """The file holding ``dataset``'s per-dataset artefacts (covariates, split, constants)."""
    return f"{dataset}_dataset.zip"


def instance_group(noise: str, coverage: str, seed: int) -> str:
    """An instance's group inside its (dataset, prior) file."""
    return f"{noise}/{coverage}/{int(seed)}"
