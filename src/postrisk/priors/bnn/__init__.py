"""The Bayesian neural network prior (docs/design.md, "Priors" and "Task instances").

- :mod:`postrisk.priors.bnn.model` — the network f, its prior weights, the scale constant,
  the negative log joint density the sampler sees, f at given rows for weight samples.
- :mod:`postrisk.priors.bnn.sampler` — the posterior engine: NumPyro NUTS in float64 (inside
  ``jax.enable_x64``), chains spread over the devices, progress from the compiled loop.
- :mod:`postrisk.priors.bnn.prior` — ``BayesianNeuralNetworkPrior``, the prior interface
  over both.

Nothing is imported here (JAX and NumPyro are imported by the sampler when it runs); import the
submodules directly.
"""
