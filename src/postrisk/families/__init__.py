"""The task families: one module (or package) each, whose ``FAMILY`` (a
:class:`postrisk.grid.study.TaskFamily`) says how its stores are opened and, beside the
regression family of the benchmark, which stages build its instances (its pipeline, config
``families.<name>``). A module here is registered by being here; another is named by the config
key ``family_packages`` (docs/contributing.md, "Adding a task family")."""
