"""Errors whose message says everything the user needs."""


def install_extra(extra: str) -> str:
    """What installs an extra: postrisk is installed from its checkout (it is not on PyPI), so
    the advice names the checkout's extras, not a package index's."""
    return (f"pip install '.[{extra}]' in the postrisk checkout (as locked: uv sync --frozen "
            f"--extra {extra})")


class StopJob(RuntimeError):
    """A job that must stop for a reason its message states in full (a missing GPU, …): the
    job's log and the terminal get the message alone, without a traceback, and the job exits
    with code 1 (:func:`postrisk.core.logs.job_log`)."""
