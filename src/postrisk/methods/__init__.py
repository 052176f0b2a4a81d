"""Uncertainty methods (docs/design.md, "Methods"): the interface, the guarded fit, fit
records, the ensemble reducer, the registry and the method table (`postrisk.methods.table`).
The table lists the reference rows (`oracle`, `mahalanobis`, `knn10`, `constant_au`) by name
only; the rows themselves are functions of a task's arrays and live in
`postrisk.evaluation.reference_rows`. Names are imported lazily so
`import postrisk.methods.registry` stays light."""

from postrisk.core.lazy import lazy_exports

_EXPORTS = {
    "FIT_RECORD_SCHEMA": "postrisk.methods.records",
    "FitRecord": "postrisk.methods.records",
    "Prediction": "postrisk.methods.interface",
    "UncertaintyMethod": "postrisk.methods.interface",
    "check_prediction": "postrisk.methods.runner",
    "reduce_members": "postrisk.methods.ensemble",
    "Standardizer": "postrisk.methods.scaling",
    "as_inputs": "postrisk.methods.scaling",
    "as_training_data": "postrisk.methods.scaling",
    "fit_records_from_dataset": "postrisk.methods.records",
    "fit_records_to_dataset": "postrisk.methods.records",
    "run_fit": "postrisk.methods.runner",
    "run_estimator": "postrisk.methods.runner",
    "resolve_method": "postrisk.methods.runner",
    "benchmark_configuration": "postrisk.methods.records",
    "backbone_features": "postrisk.methods.nn.features",
    "BayesianLinearRegression": "postrisk.methods.blr",
    "METHODS": "postrisk.methods.registry",
    "get_method": "postrisk.methods.registry",
    "make_method": "postrisk.methods.registry",
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports("postrisk.methods", _EXPORTS)
