"""postrisk: semi-synthetic regression tasks with ground-truth aleatoric and epistemic
uncertainty, their reference posteriors, uncertainty methods and oracle metrics."""

from importlib import metadata

try:
    __version__ = metadata.version("postrisk")
except metadata.PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"
