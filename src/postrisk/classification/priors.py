"""The priors a classification instance can use, by name: each gives prior draws of the K
latents (at amplitude 1, for the amplitude's calibration; and at the instance's amplitude, for
the truth) and the reference posterior given the training labels.

``gp``: K independent GPs with the dataset's regression GP prior (NUTS on whitened latents,
:mod:`postrisk.classification.sampler`); ``bnn``: the regression network with K outputs (NUTS
on its weights, :mod:`postrisk.classification.network`). Binary HBART is not among them
(docs/classification.md, "Priors").
"""

from __future__ import annotations

from postrisk.classification.network import NetworkLatents
from postrisk.classification.sampler import GpLatents

LATENT_PRIORS = {prior.name: prior for prior in (GpLatents(), NetworkLatents())}
#: The priors a classification instance can use.
CLASSIFICATION_PRIORS = tuple(LATENT_PRIORS)


def latent_prior(name: str):
    """The prior ``name`` (one of :data:`CLASSIFICATION_PRIORS`)."""
    if name not in LATENT_PRIORS:
        raise ValueError(f"classification instances use the priors {CLASSIFICATION_PRIORS}, "
                         f"not {name!r}")
    return LATENT_PRIORS[name]
