"""The base class of the neural methods built on the one network (:mod:`.network`).

:class:`NeuralNetworkMethod` declares the hyper-parameters every network shares
(:data:`NETWORK_DEFAULTS`: the backbone's width and number of blocks, epochs, batch size,
NAdamW's learning rate, weight decay and momentum, the activation, the dropout rate, the
spectral-norm switch and coefficient, the variance bounds) and the shared search space (paper
App. C.4); each method declares what it adds or changes in its own ``defaults`` and
``search_space``, merged in by :class:`~postrisk.methods.interface.UncertaintyMethod`. A class
whose default has spectral normalisation on also searches ``sn_coeff`` (placed after the shared
entries): a spectrally normalised variant is a setting, not a copy.

It also holds the steps every network method repeats: standardising the data, building the
spec, the traced optimiser, the training call, the seeds of members and dropout passes, and the
Gaussian prediction through the one reducer with the variance bounds.

Seeds: member i is initialised from ``member_seeds(random_state, M)[i]`` and trained with key
``jax.random.split(PRNGKey(random_state), M)[i]`` (a single network: seed ``[0]`` and the key
itself); a method's second network (``stream`` s > 0) uses seeds spawned from
``member_seeds(random_state, s + 1)[s]`` and the key ``fold_in(PRNGKey(random_state), s)``;
dropout passes at prediction use keys split from a separate stream.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from postrisk.methods.ensemble import reduce_members
from postrisk.methods.interface import Prediction, UncertaintyMethod
from postrisk.methods.nn.backbone import SHARED_DEFAULTS, SHARED_SEARCH_SPACE
from postrisk.methods.nn.network import (
    NetworkSpec,
    gaussian_members,
    gaussian_nll_loss,
    init_members,
    init_network,
    predict_raw,
)
from postrisk.methods.nn.train import nadamw, per_member, train
from postrisk.methods.resampling import member_seeds
from postrisk.methods.scaling import Standardizer, as_inputs, as_training_data

logger = logging.getLogger(__name__)

#: Every network's hyper-parameters and defaults (the shared ones of App. C.4, plus the
#: dropout rate — 0, no dropout, unless a method searches it — spectral normalisation, and the
#: bounds [variance_floor, variance_ceiling]·Var(ỹ) = [1e-6, 50] in standardised units that each
#: member's or pass's variance is clipped to before the reducer: the earlier public code's
#: bounds, here a visible setting of each method, never a silent clip).
NETWORK_DEFAULTS: dict[str, Any] = {
    **SHARED_DEFAULTS,
    "dropout": 0.0,
    "spectral_norm": False,
    "sn_coeff": 1.0,
    "variance_floor": 1e-6,
    "variance_ceiling": 50.0,
}
#: The spectral-norm coefficient's range (App. C.4, the SN variants).
SN_COEFF_SPACE = ("float", 0.5, 3.0, "log")
#: The stream of the dropout passes' keys at prediction (distinct from training's keys).
_PASS_STREAM = 0x5EED
#: The hyper-parameters the shared loop traces (optimiser numbers, epochs, the dropout rate and
#: spectral-norm coefficient kept in the state): configurations that differ only in these train
#: as one program (:meth:`NeuralNetworkMethod.fit_together`).
TRACED = ("learning_rate", "weight_decay", "momentum", "n_epochs", "dropout", "sn_coeff")


class NeuralNetworkMethod(UncertaintyMethod):
    """A method on the shared network (module docstring). Subclasses declare their own
    ``defaults`` and ``search_space`` (added to the shared ones) and ``head``, and implement
    ``fit``/``predict`` with the helpers."""

    defaults: ClassVar[dict[str, Any]] = NETWORK_DEFAULTS
    search_space: ClassVar[dict[str, tuple]] = SHARED_SEARCH_SPACE
    head: ClassVar[str] = "gaussian"

    @classmethod
    def _arrange_search_space(cls, space: dict[str, tuple]) -> dict[str, tuple]:
        """The shared entries first; then ``sn_coeff`` when spectral normalisation is on by
        default; then the method's own."""
        if not cls.defaults["spectral_norm"]:
            return space
        shared = {key: spec for key, spec in space.items() if key in SHARED_SEARCH_SPACE}
        return {**shared, "sn_coeff": space.get("sn_coeff", SN_COEFF_SPACE), **space}

    # -- the steps every network method shares -------------------------------------------
    def _standardize(self, x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        """Checked data in standardised units; sets ``standardizer_``."""
        x, y = as_training_data(x, y)
        self.standardizer_ = scaler = Standardizer.fit(x, y)
        return scaler.inputs(x), scaler.target(y)

    def _inputs(self, x: Any) -> np.ndarray:
        return self.standardizer_.inputs(as_inputs(x, self.standardizer_.n_features))

    def _spec(self, in_dim: int, head: str | None = None) -> NetworkSpec:
        return NetworkSpec(in_dim=int(in_dim), width=int(self.width),
                           n_blocks=int(self.n_blocks), head=head or self.head,
                           activation=str(self.activation), dropout=float(self.dropout) > 0,
                           spectral_norm=bool(self.spectral_norm))

    def _settings(self) -> dict[str, float]:
        return {"dropout": float(self.dropout), "sn_coeff": float(self.sn_coeff)}

    def _init(self, spec: NetworkSpec, n_members: int | None, stream: int = 0,
              **settings: float) -> tuple[dict, dict]:
        """Initial parameters: ``n_members`` stacked members, or one network (None); ``stream``
        selects an independent set of seeds (a method's second network)."""
        values = {**self._settings(), **settings}
        root = self.random_state if stream == 0 else member_seeds(self.random_state,
                                                                   stream + 1)[stream]
        seeds = member_seeds(root, n_members or 1)
        if n_members is None:
            return init_network(spec, seeds[0], **values)
        return init_members(spec, seeds, **values)

    def _train(self, spec: NetworkSpec, loss: Any, params: dict, state: dict, x: np.ndarray,
               y: np.ndarray, *, n_members: int | None = None, member_rows: Any = None,
               n_epochs: int | None = None, stream: int = 0,
               label: str | None = None) -> tuple[dict, dict, dict]:
        """The shared loop with the method's NAdamW settings (traced) and minibatches."""
        key = jax.random.PRNGKey(self.random_state)
        if stream:
            key = jax.random.fold_in(key, stream)
        return train(loss, params, state, x, y,
                     optimizer=nadamw(float(self.learning_rate), float(self.momentum),
                                      float(self.weight_decay)),
                     n_epochs=int(n_epochs or self.n_epochs), batch_size=int(self.batch_size),
                     key=key, n_members=n_members, member_rows=member_rows,
                     label=label or f"{self.name}: epochs")

    # -- several configurations of one architecture as one program (a sweep's batch) ----
    #: Whether :meth:`fit_together` trains this method's configurations as one program (the
    #: methods whose fit is the shared Gaussian objective alone: :meth:`_trial_members`).
    trial_batching: ClassVar[bool] = False

    @classmethod
    def architecture(cls, config: dict) -> tuple:
        """What configurations must share to train as one program: every hyper-parameter
        but the numbers the loop traces (:data:`TRACED`)."""
        return tuple(sorted((k, repr(v)) for k, v in config.items() if k not in TRACED))

    def _trial_members(self) -> int | None:
        """The members this configuration trains (None: one network); checks the settings
        as :meth:`fit` does."""
        raise NotImplementedError(f"{self.name} does not train trials together")

    @classmethod
    def fit_together(cls, methods: list[NeuralNetworkMethod], x: Any, y: Any) -> None:
        """Fit ``methods`` (configurations of one :meth:`architecture`) as one vmapped
        program: every configuration's members (or its one network) stacked on the member
        axis, each with its own optimiser numbers, epochs, traced settings, initialisation and
        keys, so each ends as its own :meth:`fit` would (to float rounding)."""
        if not cls.trial_batching:
            raise NotImplementedError(f"{cls.name} does not train trials together")
        if len({cls.architecture(m.hyperparameters()) for m in methods}) != 1:
            raise ValueError("fit_together needs configurations of one architecture")
        counts = [m._trial_members() for m in methods]
        first = methods[0]
        x_std, y_std = first._standardize(x, y)
        spec = first._spec(x_std.shape[1])
        inits, keys, optimizers, epochs = [], [], [], []
        for method, count in zip(methods, counts, strict=True):
            method.standardizer_, method.spec_ = first.standardizer_, spec
            params, state = method._init(spec, count)
            if count is None:  # one network: a member axis of one, its own key
                params, state = jax.tree.map(lambda a: a[None], (params, state))
                keys.append(jax.random.PRNGKey(method.random_state)[None])
            else:
                keys.append(jax.random.split(jax.random.PRNGKey(method.random_state), count))
            inits.append((params, state))
            size = count or 1
            optimizers += [nadamw(float(method.learning_rate), float(method.momentum),
                                  float(method.weight_decay))] * size
            epochs += [int(method.n_epochs)] * size
        params, state = jax.tree.map(lambda *a: jnp.concatenate(a), *inits)
        logger.info("%s: training %d configurations as one program (%d members) on n=%d, d=%d",
                    cls.name, len(methods), len(epochs), *x_std.shape)
        params, state, history = train(
            gaussian_nll_loss(spec), params, state, x_std, y_std, optimizer=per_member(optimizers),
            n_epochs=epochs, batch_size=int(first.batch_size), key=None,
            member_keys=jnp.concatenate(keys), n_members=len(epochs),
            label=f"{cls.name}: {len(methods)} configurations, epochs")
        start = 0
        for method, count in zip(methods, counts, strict=True):
            # its members, or (one network) its one member without the member axis
            index = slice(start, start + count) if count else start
            method.params_, method.state_ = jax.tree.map(lambda a, i=index: a[i],
                                                         (params, state))
            method.history_ = {"loss": history["loss"][index][..., :int(method.n_epochs)],
                               "seconds": history["seconds"]}
            start += count or 1

    def variance_bounds(self) -> tuple[float, float]:
        """(floor, ceiling) of a member's variance in standardised units (Var(ỹ) = 1)."""
        return float(self.variance_floor), float(self.variance_ceiling)

    def _pass_keys(self, n_passes: int) -> jax.Array:
        """One key per dropout pass at prediction (fixed by ``random_state``)."""
        stream = jax.random.fold_in(jax.random.PRNGKey(self.random_state), _PASS_STREAM)
        return jax.random.split(stream, int(n_passes))

    def _fit_gaussian(self, x: np.ndarray, y: np.ndarray, *, n_members: int | None = None,
                      member_rows: Any = None) -> NeuralNetworkMethod:
        """Standardise, then train members (or one network) on the Gaussian objective; sets
        ``spec_``, ``params_``, ``state_``, ``history_``."""
        x_std, y_std = self._standardize(x, y)
        spec = self.spec_ = self._spec(x_std.shape[1])
        params, state = self._init(spec, n_members)
        logger.info("%s: training %s on n=%d, d=%d for %d epochs", self.name,
                    f"{n_members} members" if n_members else "one network", *x_std.shape,
                    int(self.n_epochs))
        self.params_, self.state_, self.history_ = self._train(
            spec, gaussian_nll_loss(spec), params, state, x_std, y_std, n_members=n_members,
            member_rows=member_rows)
        return self

    def _predict_gaussian(self, x: Any, *, members: bool = False,
                          n_passes: int | None = None) -> Prediction:
        """Members' or dropout passes' Gaussians through the one reducer (member variances
        clipped to [variance_floor, variance_ceiling] in standardised units), in target
        units."""
        pass_keys = self._pass_keys(n_passes) if n_passes else None
        raw = predict_raw(self.spec_, self.params_, self.state_, self._inputs(x),
                          members=members, pass_keys=pass_keys)
        means, variances = gaussian_members(self.spec_, raw)
        prediction = reduce_members(means, variances, variance_bounds=self.variance_bounds())
        return self.standardizer_.prediction_to_target(prediction)


def positive_int(value: Any, name: str) -> int:
    """``value`` as an int ≥ 1, else ``ValueError`` naming ``name``."""
    if int(value) < 1 or int(value) != float(value):
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)
