"""postrisk: semi-synthetic regression tasks with ground-truth aleatoric and epistemic
uncertainty, their reference posteriors, uncertainty methods and oracle metrics."""

from postrisk.core.io import package_version

__version__ = package_version()

__all__ = ["Task", "evaluate", "get_task", "list_tasks", "load_task", "validate_store",
           "__version__"]


def __getattr__(name: str):
    # Lazy, so `import postrisk` stays light (no xarray/zarr until used).
    if name == "validate_store":
        from postrisk.tasks.store import validate_store

        return validate_store
    if name in ("load_task", "list_tasks"):
        from postrisk.release import load

        return getattr(load, name)
    if name == "get_task":
        from postrisk.release.embedded import get_task

        return get_task
    if name == "evaluate":
        from postrisk.evaluation.evaluate import evaluate

        return evaluate
    if name == "Task":
        from postrisk.tasks.task import Task

        return Task
    raise AttributeError(f"module 'postrisk' has no attribute {name!r}")
