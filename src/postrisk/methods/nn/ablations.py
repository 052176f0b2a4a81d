"""The natural-parameter-head ablations of the paper's App. D.2 (rows of
:data:`postrisk.methods.table.ABLATION_TABLE`).

Each is the method it ablates with one change: the Gaussian head reads its two raw outputs as
natural parameters, η₁ = a and η₂ = −(softplus(ρ) + ε)/2 < 0, so ṽ = −1/(2η₂) and μ̃ = η₁ṽ
(:func:`postrisk.methods.nn.heads.natural_gaussian_head`; Immer et al. 2023), instead of
(μ̃, ρ) with ṽ = (softplus(ρ) + ε)². Both heads represent the same Gaussian family; the
optimisation coordinates and the coordinates in which members vary differ. Everything else —
hyper-parameters, training, the reducer, the calibration of SWAG — is the ablated method's.
"""

from __future__ import annotations

from typing import ClassVar

from postrisk.methods.nn.ensembles import MCDropout, NeuralBag, NeuralEnsemble
from postrisk.methods.nn.swag import NeuralSWAG


class NaturalHeadEnsemble(NeuralEnsemble):
    """NN-Ens with the natural-parameter head (module docstring)."""

    head: ClassVar[str] = "natural"


class NaturalHeadBag(NeuralBag):
    """NN-Bag with the natural-parameter head (module docstring)."""

    head: ClassVar[str] = "natural"


class NaturalHeadDropout(MCDropout):
    """MC dropout with the natural-parameter head (module docstring)."""

    head: ClassVar[str] = "natural"


class NaturalHeadSWAG(NeuralSWAG):
    """NN-SWAG with the natural-parameter head (module docstring)."""

    head: ClassVar[str] = "natural"
