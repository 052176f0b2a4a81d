"""The planning layer: a validated configuration (:mod:`postrisk.grid`) turned into the work
that runs it. Modules, from the bottom up (each imports only those below it; ``make lint``
checks it):

* :mod:`~postrisk.planning.conditions` — conditions, what is implemented, fitted and tuned;
* :mod:`~postrisk.planning.seeds` — the seed policy: which seeds are built and may be used;
* :mod:`~postrisk.planning.units` — the benchmark's units of work (frozen dataclasses), and every
  stage's units at once (the studies' from their registrations);
* :mod:`~postrisk.planning.cost` — what a job asks of a cluster (cost model, accelerators);
* :mod:`~postrisk.planning.jobs` — units grouped into jobs, and the Snakemake rules that run them;
* :mod:`~postrisk.planning.planner` — :class:`~postrisk.planning.planner.Planner`: all of the
  above for one configuration, once;
* :mod:`~postrisk.planning.plan` — the plan as a table (requests and estimates, on GPUs and on a
  CPU-only cluster), where its outputs are, and the guard against a local full run.

Which of the built seeds are *valid* (the BNN R̂ rule) is decided at run time by
``postrisk.tasks.validity``. Nothing is re-exported here: import a name from its module.
"""
