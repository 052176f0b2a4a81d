"""Tables and figures of the paper from the workflow's outputs: Table 3 and the rank histograms
(:mod:`~postrisk.report.checks`), the mean-ρ table and figure (:mod:`~postrisk.report.scores`)."""

import matplotlib

matplotlib.use("Agg")  # figures are written to files; no display is needed or assumed
