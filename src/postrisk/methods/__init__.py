"""Uncertainty methods (SPEC §10): the interface, the guarded fit, the registry and the
reference rows. Names are imported lazily so `import postrisk.methods.registry` stays light."""

from postrisk._lazy import lazy_exports

_EXPORTS = {
    "FIT_RECORD_SCHEMA": "postrisk.methods.base",
    "FitRecord": "postrisk.methods.base",
    "Prediction": "postrisk.methods.base",
    "UncertaintyMethod": "postrisk.methods.base",
    "check_prediction": "postrisk.methods.base",
    "reduce_members": "postrisk.methods.base",
    "Standardizer": "postrisk.methods.scaling",
    "as_inputs": "postrisk.methods.scaling",
    "as_training_data": "postrisk.methods.scaling",
    "fit_records_from_dataset": "postrisk.methods.base",
    "fit_records_to_dataset": "postrisk.methods.base",
    "run_fit": "postrisk.methods.base",
    "BayesianLinearRegression": "postrisk.methods.blr",
    "REFERENCE_ROWS": "postrisk.methods.reference",
    "constant_au_prediction": "postrisk.methods.reference",
    "distance_prediction": "postrisk.methods.reference",
    "oracle_prediction": "postrisk.methods.reference",
    "reference_prediction": "postrisk.methods.reference",
    "METHODS": "postrisk.methods.registry",
    "get_method": "postrisk.methods.registry",
    "make_method": "postrisk.methods.registry",
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports("postrisk.methods", _EXPORTS)
