"""Task instances: the instance key, generation, the store contract and the ``Task`` object.

``TASK_SCHEMA_VERSION`` is the version of the sample and task stores (docs/task_store.md). It
lives here, light to import, because the workflow passes it to the jobs that write stores.
Version 4: ``rhat`` and ``ess`` are computed from the stored float32 draws, so recomputing them
from a store gives the stored values exactly. Version 3: ``rhat`` and ``ess`` are ArviZ's
rank-normalised split-R̂ and bulk ESS, the evaluation rows are disjoint from the training inputs
by value, and the provenance attributes are complete. Version 2 had the classic split-R̂;
version 1 no chain order of draws.
"""

TASK_SCHEMA_VERSION = "4"
