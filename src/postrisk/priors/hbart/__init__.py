"""Heteroscedastic BART, the tree-ensemble prior (docs/design.md, "Priors" and "Task
instances").

- :mod:`postrisk.priors.hbart.model` — bartz's tree prior, our numpy sampler of it, f at
  given rows, the scale constant.
- :mod:`postrisk.priors.hbart.sampler` — the posterior engine: bartz MCMC with the error
  precision held fixed and a tempered warm-up (JAX x64 off).
- :mod:`postrisk.priors.hbart.prior` — ``HeteroscedasticBartPrior``, the prior interface
  over both.

Nothing is imported here (bartz and JAX are imported by the sampler when it runs); import the
submodules directly.
"""
