"""Config ``studies.sn_study`` (postrisk.studies.sn_study.config): its methods (the network
methods App. D.4 re-tunes), its schema — every key required, no other key, each value's range
at its boundaries —, the check that its ranges run upwards and what its summary takes (the
bootstrap's replicates and the instances threshold, as the grid's settings hook passes them);
through validate_config, a bad section is refused with a message naming the key, and a partial
one is completed from config.yaml.

The study's units from such a section: tests/planning/test_units.py and
tests/studies/test_studies_workflow.py."""

from __future__ import annotations

import copy
from functools import partial

import jsonschema
import pytest

from postrisk.covariates.registry import task_datasets
from postrisk.grid.config import ConfigError, merge_layers, validate_config
from postrisk.grid.study import study, study_settings
from postrisk.grid.vocabulary import METHODS
from postrisk.methods.table import METHOD_ENTRIES
from postrisk.studies.sn_study.config import (
    SN_METHODS,
    check_sn_study,
    sn_study_schema,
    summary_settings,
)
from tests.studies.config_helpers import validated_study

#: A valid section of its own (not config.yaml's numbers).
SECTION = {"run": False, "methods": ["nn_ens", "nn_lap"], "datasets": ["concrete"],
           "priors": ["gp"], "noise": "bump", "coverage": "ood", "seeds_per_condition": 2,
           "trials": 4, "startup_trials": 0, "sn_coeff": [0.25, 4.0],
           "weight_decay": [0.001, 0.1], "max_preservation_points": 10, "min_instances": 3,
           "bootstrap": 99}


def _errors(section) -> list[jsonschema.ValidationError]:
    return list(jsonschema.Draft202012Validator(sn_study_schema()).iter_errors(section))


#: ``_validated(paper, change)``: ``change`` to ``studies.sn_study`` over config.yaml, validated.
_validated = partial(validated_study, "sn_study")


# ---------------------------------------------------------------------------------- methods

def test_the_studys_methods_are_distinct_registered_network_methods():
    assert len(set(SN_METHODS)) == len(SN_METHODS) > 0
    assert set(SN_METHODS) <= set(METHODS)
    # networks (the method table's group) on the shared network: none is already spectrally
    # normalised (an `_sn` variant, the study's SN arm) and SNGP-Het brings its own
    assert {METHOD_ENTRIES[m].group for m in SN_METHODS} == {"neural"}
    assert not any(m.endswith("_sn") for m in SN_METHODS) and "sngp_het" not in SN_METHODS


def test_the_methods_are_the_studys_own_whatever_the_configuration_may_use():
    assert _errors({**SECTION, "methods": list(SN_METHODS)}) == []
    assert sn_study_schema(("blr", "my_method")) == sn_study_schema()
    for name in sorted(set(METHODS) - set(SN_METHODS)):
        (error,) = _errors({**SECTION, "methods": [name]})
        assert error.validator == "enum" and list(error.validator_value) == list(SN_METHODS)


# ---------------------------------------------------------------------------------- schema

def test_a_valid_section_passes_the_schema_and_the_check(paper):
    assert _errors(SECTION) == []
    check_sn_study(SECTION)
    assert _validated(paper, SECTION)["studies"]["sn_study"] == SECTION
    assert _errors({**SECTION, "datasets": None}) == []  # null: every configured dataset
    assert _errors({**SECTION, "datasets": list(task_datasets())}) == []
    assert _errors(paper["studies"]["sn_study"]) == []  # config.yaml's own
    check_sn_study(paper["studies"]["sn_study"])


def test_a_partial_section_is_completed_from_config_yaml(paper):
    defaults = paper["studies"]["sn_study"]
    got = _validated(paper, {"methods": ["nn_drop"], "bootstrap": 7})["studies"]["sn_study"]
    assert got == {**defaults, "methods": ["nn_drop"], "bootstrap": 7}


def test_every_key_is_required(paper):
    for key in SECTION:
        section = {k: v for k, v in SECTION.items() if k != key}
        assert [e.message for e in _errors(section)] == [f"'{key}' is a required property"]
    cfg = merge_layers([paper])  # a copy
    del cfg["studies"]["sn_study"]["min_instances"]
    with pytest.raises(ConfigError, match=r"'studies\.sn_study': 'min_instances' is a required"):
        validate_config(cfg)


#: (a change to a valid section, the key the message names, what it says).
BAD = [
    ({"sn_coef": [0.5, 3.0]}, "studies.sn_study", r"unknown key\(s\) \['sn_coef'\]"),
    ({"run": 1}, "studies.sn_study.run", "not of type 'boolean'"),
    ({"methods": []}, "studies.sn_study.methods", "non-empty"),
    ({"methods": ["nn_lap", "nn_lap"]}, "studies.sn_study.methods", "non-unique"),
    ({"methods": ["nn_lap", "blr"]}, r"studies.sn_study.methods\[1\]",
     "'blr' is not allowed; allowed values: " + ", ".join(SN_METHODS)),
    ({"datasets": ["red_wine"]}, r"studies.sn_study.datasets\[0\]", "'red_wine' is not"),
    ({"datasets": "concrete"}, "studies.sn_study.datasets", "'concrete'"),
    ({"priors": []}, "studies.sn_study.priors", "non-empty"),
    ({"priors": ["xgb"]}, r"studies.sn_study.priors\[0\]", "'xgb' is not allowed"),
    ({"noise": "loud"}, "studies.sn_study.noise", "'loud' is not allowed"),
    ({"coverage": "half"}, "studies.sn_study.coverage", "'half' is not allowed"),
    ({"seeds_per_condition": 0}, "studies.sn_study.seeds_per_condition", "0 must be"),
    ({"trials": 0}, "studies.sn_study.trials", "0 must be"),
    ({"startup_trials": -1}, "studies.sn_study.startup_trials", "-1 must be"),
    ({"sn_coeff": [0, 1.0]}, r"studies.sn_study.sn_coeff\[0\]", "0 must be"),
    ({"sn_coeff": [1.0]}, "studies.sn_study.sn_coeff", "too short"),
    ({"sn_coeff": [0.5, 1.0, 2.0]}, "studies.sn_study.sn_coeff", "too long"),
    ({"weight_decay": [0.01, -1.0]}, r"studies.sn_study.weight_decay\[1\]", "-1.0 must be"),
    ({"max_preservation_points": 9}, "studies.sn_study.max_preservation_points", "9 must be"),
    ({"min_instances": 0}, "studies.sn_study.min_instances", "0 must be"),
    ({"bootstrap": 0}, "studies.sn_study.bootstrap", "0 must be"),
    ({"bootstrap": 10.5}, "studies.sn_study.bootstrap", "not of type 'integer'"),
]


@pytest.mark.parametrize(("change", "key", "what"), BAD,
                         ids=[f"{k}={v}" for change, _, _ in BAD for k, v in change.items()])
def test_a_bad_value_is_refused_with_a_message_naming_the_key(paper, change, key, what):
    with pytest.raises(ConfigError, match=rf"config key '{key}': .*{what}"):
        _validated(paper, change)


def test_the_boundary_values_are_allowed():
    for change in ({"startup_trials": 0}, {"max_preservation_points": 10},
                   {"seeds_per_condition": 1}, {"trials": 1}, {"min_instances": 1},
                   {"bootstrap": 1}, {"sn_coeff": [1e-9, 1e-8]}):
        assert _errors({**SECTION, **change}) == [], change


# ----------------------------------------------------------------------------------- check

@pytest.mark.parametrize("key", ["sn_coeff", "weight_decay"])
@pytest.mark.parametrize("bounds", [[3.0, 0.5], [1.0, 1.0]])
def test_a_range_that_does_not_run_upwards_is_refused(paper, key, bounds):
    section = {**SECTION, key: bounds}
    assert _errors(section) == []  # a schema cannot say it
    with pytest.raises(ConfigError) as err:
        check_sn_study(section)
    assert str(err.value) == (f"config key 'studies.sn_study.{key}': {bounds} must run "
                              "upwards ([low, high], high > low)")
    with pytest.raises(ConfigError, match=rf"'studies\.sn_study\.{key}': .* must run upwards"):
        _validated(paper, {key: bounds})


def test_the_first_range_that_is_wrong_is_named():
    with pytest.raises(ConfigError, match=r"'studies\.sn_study\.sn_coeff'"):
        check_sn_study({**SECTION, "sn_coeff": [2.0, 1.0], "weight_decay": [2.0, 1.0]})


# -------------------------------------------------------------------------- summary settings

def test_the_summary_takes_the_bootstrap_and_the_instances_threshold():
    before = copy.deepcopy(SECTION)
    assert summary_settings(SECTION) == {"bootstrap": 99, "min_instances": 3}
    assert SECTION == before
    # what the summary does not read does not rerun it
    changed = {**SECTION, "run": True, "trials": 9, "methods": ["nn_bag"]}
    assert summary_settings(changed) == summary_settings(SECTION)
    assert summary_settings({**SECTION, "bootstrap": 5}) != summary_settings(SECTION)
    # the keys a section has, of those two
    assert summary_settings({"bootstrap": 5, "trials": 2}) == {"bootstrap": 5}
    assert summary_settings({}) == {}


def test_the_grid_calls_the_hook_with_the_configured_section(paper):
    sn_study = study("sn_study")
    cfg = _validated(paper, {"bootstrap": 123, "min_instances": 4})
    assert sn_study.settings(study_settings(cfg, "sn_study")) == {"bootstrap": 123,
                                                                  "min_instances": 4}
    assert sn_study.settings(study_settings({}, "sn_study")) == {}  # no section
