"""The grid's vocabulary: the names a configuration may use on each axis.

Each list is read from where the thing named is defined (the priors' registry, the noise
shapes, the coverage scenarios, the method table), so a new prior, noise mode, coverage
scenario or method is added in one place and the configuration schema, the workflow's wildcard
constraints and the plan follow.
"""

from __future__ import annotations

from postrisk.methods.table import METHOD_ENTRIES
from postrisk.priors.base import PRIOR_ENTRIES
from postrisk.tasks.coverage import SCENARIOS
from postrisk.tasks.noise import SHAPES

#: Priors over functions (``postrisk.priors``).
PRIORS: tuple[str, ...] = tuple(PRIOR_ENTRIES)
#: Noise modes (``postrisk.tasks.noise``).
NOISE_MODES: tuple[str, ...] = tuple(SHAPES)
#: Training-sample coverage scenarios (``postrisk.tasks.coverage``).
COVERAGES: tuple[str, ...] = tuple(SCENARIOS)
#: The paper's 19 methods (the method table, ``postrisk.methods.table``; no reference rows).
METHODS: tuple[str, ...] = tuple(METHOD_ENTRIES)
