"""The backbone features a fitted network method reads its EU from (the SN study, App. D.4).

:func:`backbone_features` returns, for a fitted method on the shared network, its inputs as the
backbone sees them (the covariates standardised with the training rows' means and SDs) and the
last-layer features h(x) of every network whose features the method's EU comes from:

- one network (NN-Lap, NN-FSP, NN-EDL, MC dropout with dropout off, NN-DEUP's predictor — its
  second, error network reads the same inputs but is not the model being judged): ``[h]``;
- stacked members (NN-Ens, NN-Bag): one ``h`` per member;
- NN-SWAG: the SWA mean's network (the centre of its Gaussian over the weights).

:func:`dense_spectral_norms` gives the exact largest singular value (by SVD) of every dense
layer of the backbone as used at prediction (spectrally normalised where the method is), for
one network or each member.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from postrisk.methods.nn.backbone import spectral_norms
from postrisk.methods.nn.method import NeuralNetworkMethod
from postrisk.methods.nn.network import PREDICT_POWER_ITERATIONS, member, predict_features


def _networks(method: NeuralNetworkMethod) -> list[tuple[dict, dict]]:
    """(params, state) of each network whose features carry the method's EU."""
    if not hasattr(method, "params_"):
        raise ValueError(f"{method.name} is not fitted: fit it before asking for its features")
    if hasattr(method, "swag_mean_"):
        return [(method.swag_mean_, method.swag_state_)]
    params, state = method.params_, method.state_
    if np.ndim(params["dense"][0]["w"]) == 3:  # members stacked on a leading axis
        return [(member(params, i), member(state, i))
                for i in range(int(np.shape(params["dense"][0]["w"])[0]))]
    return [(params, state)]


def backbone_features(method: Any, x: Any) -> tuple[np.ndarray, list[np.ndarray]]:
    """(the backbone's inputs at ``x`` (m, d), [h(x) (m, width) per network]) of a fitted
    method on the shared network (module docstring)."""
    if not isinstance(method, NeuralNetworkMethod):
        raise TypeError(f"{type(method).__name__} is not a method on the shared network")
    networks = _networks(method)
    inputs = method._inputs(x)
    features = [predict_features(method.spec_, params, state, inputs)[0]
                for params, state in networks]
    return inputs, features


def dense_spectral_norms(method: Any) -> list[list[float]]:
    """Per network (:func:`backbone_features`' order), the largest singular value of every
    dense backbone layer's effective weight at prediction."""
    if not isinstance(method, NeuralNetworkMethod):
        raise TypeError(f"{type(method).__name__} is not a method on the shared network")
    backbone = method.spec_.backbone
    out = []
    for params, state in _networks(method):
        coeff = float(state["settings"]["sn_coeff"])
        out.append(spectral_norms(backbone, params, state["sn"],
                                  power_iterations=PREDICT_POWER_ITERATIONS, sn_coeff=coeff))
    return out
