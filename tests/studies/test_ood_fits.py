"""The OOD study's queries and fits: the rows each method is asked at, and a fit that is the
benchmark's own."""

import numpy as np
import pytest

from postrisk.covariates.build import Covariates
from postrisk.gp.kernels import default_kernel
from postrisk.methods.runner import run_fit
from postrisk.studies.ood_proxy.fits import (
    fit_at_query,
    query_rows,
    study_query,
    true_posterior_variance,
)
from postrisk.tasks.generate import TaskKey, build_sample, build_task
from postrisk.tasks.task import Task


@pytest.fixture(scope="module")
def gp_task(offline_covariates):
    concrete = Covariates(offline_covariates["concrete"])
    kernel = default_kernel(("rq", "linear"), concrete.x.shape[1])
    params = {"prior": "gp", "kernel": kernel.to_dict(), "a": 1.0}
    key = TaskKey("concrete", "gp", "smooth_monotone", "balanced", 3)
    return Task(build_task(build_sample(key, concrete, params, 60), {"draws": 50}))


def test_query_rows_sizes_and_draws():
    rng = np.random.default_rng(0)
    ids, oods = query_rows(2000, 1700, rng, n_max=1500)
    assert ids.size == oods.size == 1500
    assert np.unique(ids).size == 1500 and ids.max() < 2000 and (np.diff(ids) > 0).all()
    assert np.unique(oods).size == 1500 and oods.max() < 1700
    ids, oods = query_rows(400, 1700, rng)
    assert (ids == np.arange(400)).all() and oods.size == 400  # every ID point, as many OOD
    ids, oods = query_rows(400, 150, rng)
    assert ids.size == 400 and (oods == np.arange(150)).all()  # every OOD row there is
    with pytest.raises(ValueError, match="ID points and OOD rows"):
        query_rows(0, 10, rng)


def test_study_query_is_held_out_and_keyed_by_instance(gp_task):
    x_ood = np.random.default_rng(1).uniform(-0.5, 1.5, size=(700, gp_task.x_eval.shape[1]))
    query = study_query(gp_task, x_ood, "somewhere", n_max=200)
    assert query.n_id == query.n_ood == 200 and query.x.shape == (400, x_ood.shape[1])
    assert (query.x[~query.is_ood] == gp_task.x_eval[query.id_index]).all()
    assert (query.x[query.is_ood] == x_ood[query.ood_index]).all()
    train = {row.tobytes() for row in gp_task.x_train}
    assert not any(row.tobytes() in train for row in query.x[~query.is_ood])
    again = study_query(gp_task, x_ood, "somewhere", n_max=200)
    assert (again.id_index == query.id_index).all() and (again.ood_index == query.ood_index).all()
    other = study_query(gp_task, x_ood, "elsewhere", n_max=200)
    assert not (other.ood_index == query.ood_index).all()
    with pytest.raises(ValueError, match="x_ood"):
        study_query(gp_task, x_ood[:, :2], "somewhere")


def test_a_deterministic_method_predicts_at_the_id_rows_what_the_benchmark_fit_does(gp_task):
    """Fitted as the fit stage fits it (its configuration, random_state = the seed), a
    deterministic method gives at the query's ID rows exactly its benchmark predictions there,
    and a larger EU at rows shifted away from the data."""
    x_ood = gp_task.x_eval[:50] + 2.0
    query = study_query(gp_task, x_ood, "shifted", n_max=40)
    config = {}
    bench = run_fit("blr", config, gp_task.x_train, gp_task.y_train, gp_task.x_eval,
                    random_state=3)
    ood = fit_at_query("blr", config, gp_task, query)
    assert bench.ok and ood.ok
    np.testing.assert_allclose(ood.mean[:query.n_id], bench.mean[query.id_index], rtol=1e-9)
    np.testing.assert_allclose(ood.epistemic_var[:query.n_id],
                               bench.epistemic_var[query.id_index], rtol=1e-9)
    assert np.median(ood.epistemic_var[query.is_ood]) > np.median(ood.epistemic_var[~query.is_ood])


def test_the_truth_at_the_query_rows(gp_task):
    """σ²_f at the ID rows is the store's posterior variance there; at rows far outside the
    data it is larger; an HBART instance has no exact truth off its evaluation points."""
    x_ood = gp_task.x_eval[:30] + 3.0
    query = study_query(gp_task, x_ood, "far", n_max=30)
    var = true_posterior_variance(gp_task, query)
    np.testing.assert_allclose(var[~query.is_ood], gp_task.posterior_var[query.id_index],
                               rtol=1e-10)
    assert np.median(var[query.is_ood]) > np.median(var[~query.is_ood])
    assert true_posterior_variance(Task(gp_task.ds.assign_attrs(prior="hbart")), query) is None
