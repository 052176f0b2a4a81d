"""The Gaussian-process prior (docs/design.md, "Priors"): :mod:`postrisk.priors.gp.model`
holds :class:`~postrisk.priors.gp.model.GaussianProcessPrior` (kernel fit, scale constant,
prior draws and the exact posterior; the GP mathematics itself lives in :mod:`postrisk.gp`).

Nothing is imported here; import the submodule directly.
"""
