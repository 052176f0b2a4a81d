"""Errors whose message says everything the user needs."""


class StopJob(RuntimeError):
    """A job that must stop for a reason its message states in full (a missing GPU, …): the
    job's log and the terminal get the message alone, without a traceback, and the job exits
    with code 1 (:func:`postrisk.core.logs.job_log`)."""
