"""The configuration layer: what the grid of the experiment is, read from its configuration.

Everything here describes; nothing plans. A user who only loads tasks (``postrisk.load_task``,
``postrisk.get_task``) reaches this layer at most, never the planning layer above it
(:mod:`postrisk.planning`: the planner, units, jobs and cost). Modules, from the bottom up (each
imports only those below it; ``make lint`` checks it):

* :mod:`~postrisk.grid.artefact` — one catalogue entry (a table, a figure, a page, a file);
* :mod:`~postrisk.grid.study` — the studies' registration protocol (the studies themselves are
  packages above every layer, ``postrisk.studies``, found when first asked for) and a study's
  config section;
* :mod:`~postrisk.grid.vocabulary` — the names each axis may take, read from the registries;
* :mod:`~postrisk.grid.paths` — where every store, log and benchmark lives;
* :mod:`~postrisk.grid.artefacts` — the catalogue of every table, figure, page and release file;
* :mod:`~postrisk.grid.stages` — the stages, the keys of their units, how units group;
* :mod:`~postrisk.grid.schema` — the configuration's JSON schema;
* :mod:`~postrisk.grid.config_methods` — the configuration's method names: outside methods
  resolved, entries for methods that ``methods`` does not list set aside;
* :mod:`~postrisk.grid.config` — reading the configuration (the fitted cost model, then
  ``config.yaml``, then presets), merging and validation; one section read alone.

Nothing is re-exported here: import a name from its module (``from postrisk.grid.config import
read_config``), so that importing one module loads only what it needs.
"""
