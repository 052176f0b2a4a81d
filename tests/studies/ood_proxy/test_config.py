"""Config ``studies.ood_proxy`` (postrisk.studies.ood_proxy.config): its schema — every key
required but ``methods``, no other key, the values each takes (in-distribution datasets, the
registry's OOD sets, the configuration's method names) — and the check that an OOD set is
scaled with its in-distribution dataset's constants; through validate_config, a bad section is
refused with a message naming the key, and a partial one is completed from config.yaml.

The allowed values are derived from the registries here, never from a preset. How the study's
units read the section: tests/planning/test_units.py."""

from __future__ import annotations

from functools import partial

import jsonschema
import pytest

from postrisk.covariates.registry import registry, task_datasets
from postrisk.grid.config import ConfigError, merge_layers, validate_config
from postrisk.grid.vocabulary import METHODS
from postrisk.studies.ood_proxy.config import check_ood_pair, ood_proxy_schema
from tests.studies.config_helpers import validated_study

#: The keys a section must have (docstring of ood_proxy_schema); ``methods`` may be left out.
REQUIRED = ("in_distribution", "ood", "priors", "noise", "coverage", "seeds_per_prior",
            "n_query")
#: The registry's OOD sets and the dataset whose constants scale each.
OOD_PAIRS = {name: spec.scaling_reference for name, spec in registry().items()
             if spec.role == "ood"}
#: A valid section of its own (the paper's wine pair, small numbers).
SECTION = {"in_distribution": "white_wine", "ood": "red_wine", "priors": ["gp", "bnn"],
           "noise": "bump", "coverage": "ood", "seeds_per_prior": 2, "n_query": 10,
           "methods": ["blr", "gp"]}


def _errors(section, methods=METHODS) -> list[jsonschema.ValidationError]:
    validator = jsonschema.Draft202012Validator(ood_proxy_schema(tuple(methods)))
    return list(validator.iter_errors(section))


#: ``_validated(paper, change)``: ``change`` to ``studies.ood_proxy`` over config.yaml, validated.
_validated = partial(validated_study, "ood_proxy")


def test_a_valid_section_passes_the_schema_and_the_check(paper):
    assert _errors(SECTION) == []
    check_ood_pair(SECTION)
    assert _validated(paper, SECTION)["studies"]["ood_proxy"] == SECTION
    assert _errors({k: v for k, v in SECTION.items() if k != "methods"}) == []  # optional
    assert _errors({**SECTION, "methods": None}) == []  # null: every method
    # config.yaml's own section is valid as it is
    assert _errors(paper["studies"]["ood_proxy"]) == []


def test_a_partial_section_is_completed_from_config_yaml(paper):
    defaults = paper["studies"]["ood_proxy"]
    got = _validated(paper, {"n_query": 25, "priors": ["hbart"]})["studies"]["ood_proxy"]
    assert got == {**defaults, "n_query": 25, "priors": ["hbart"]}
    assert paper["studies"]["ood_proxy"] is defaults and defaults["n_query"] != 25


@pytest.mark.parametrize("key", REQUIRED)
def test_every_key_but_methods_is_required(paper, key):
    section = {k: v for k, v in SECTION.items() if k != key}
    assert [e.message for e in _errors(section)] == [f"'{key}' is a required property"]
    cfg = merge_layers([paper])  # a copy
    del cfg["studies"]["ood_proxy"][key]
    with pytest.raises(ConfigError, match=rf"'studies\.ood_proxy': '{key}' is a required"):
        validate_config(cfg)


#: (the change to a valid section, the key the message names, what it says).
BAD = [
    ({"n_querry": 20}, "studies.ood_proxy", r"unknown key\(s\) \['n_querry'\]"),
    ({"n_query": 9}, "studies.ood_proxy.n_query", "9 must be"),
    ({"n_query": 12.5}, "studies.ood_proxy.n_query", "not of type 'integer'"),
    ({"seeds_per_prior": 0}, "studies.ood_proxy.seeds_per_prior", "0 must be"),
    ({"priors": []}, "studies.ood_proxy.priors", "non-empty"),
    ({"priors": ["gp", "gp"]}, "studies.ood_proxy.priors", "non-unique"),
    ({"priors": ["gp", "xgb"]}, r"studies.ood_proxy.priors\[1\]", "'xgb' is not allowed"),
    ({"noise": "loud"}, "studies.ood_proxy.noise", "'loud' is not allowed"),
    ({"coverage": "half"}, "studies.ood_proxy.coverage", "'half' is not allowed"),
    ({"in_distribution": "red_wine"}, "studies.ood_proxy.in_distribution",
     "'red_wine' is not allowed"),
    ({"ood": "white_wine"}, "studies.ood_proxy.ood", "'white_wine' is not allowed"),
    ({"methods": []}, "studies.ood_proxy.methods", "non-empty"),
    ({"methods": ["blr", "no_such"]}, r"studies.ood_proxy.methods\[1\]", "'no_such' is not"),
    ({"methods": "blr"}, "studies.ood_proxy.methods", "'blr'"),
]


@pytest.mark.parametrize(("change", "key", "what"), BAD,
                         ids=[f"{k}={v}" for change, _, _ in BAD for k, v in change.items()])
def test_a_bad_value_is_refused_with_a_message_naming_the_key(paper, change, key, what):
    with pytest.raises(ConfigError, match=rf"config key '{key}': .*{what}"):
        _validated(paper, change)


def test_the_boundary_values_are_allowed(paper):
    got = _validated(paper, {"n_query": 10, "seeds_per_prior": 1})["studies"]["ood_proxy"]
    assert (got["n_query"], got["seeds_per_prior"]) == (10, 1)


def test_in_distribution_is_a_task_dataset_and_ood_a_registered_ood_set():
    assert OOD_PAIRS and not set(OOD_PAIRS) & set(task_datasets())
    for name in task_datasets():
        assert _errors({**SECTION, "in_distribution": name}) == [], name
        assert [e.validator for e in _errors({**SECTION, "ood": name})] == ["enum"], name
    for name in OOD_PAIRS:
        assert [e.validator for e in _errors({**SECTION, "in_distribution": name})] == ["enum"]
        assert _errors({**SECTION, "ood": name}) == []
    (error,) = _errors({**SECTION, "ood": "white_wine"})
    assert sorted(error.validator_value) == sorted(OOD_PAIRS)  # the message lists these


def test_the_methods_are_those_the_configuration_may_use():
    outside = ("blr", "my_method")  # e.g. the paper's and an outside method's names
    assert _errors({**SECTION, "methods": ["my_method"]}, outside) == []
    assert _errors({**SECTION, "methods": ["my_method"]}) != []  # not one of the paper's
    (error,) = _errors({**SECTION, "methods": ["blr", "gp"]}, outside)
    assert error.validator == "anyOf"  # gp is not among the names given
    assert _errors({**SECTION, "methods": list(METHODS)}) == []


def test_every_registered_pair_passes_the_check():
    assert all(OOD_PAIRS.values())  # every OOD set names the dataset that scales it
    for ood, reference in OOD_PAIRS.items():
        section = {**SECTION, "in_distribution": reference, "ood": ood}
        assert _errors(section) == []
        check_ood_pair(section)


def test_a_mismatched_pair_is_refused_naming_the_key_and_the_registered_pairs(paper):
    section = {**SECTION, "in_distribution": "diamonds_ideal", "ood": "red_wine"}
    assert _errors(section) == []  # each value is allowed: only the pair is wrong
    with pytest.raises(ConfigError) as err:
        check_ood_pair(section)
    message = str(err.value)
    assert message.startswith("config key 'studies.ood_proxy.ood': red_wine is scaled with "
                              f"{OOD_PAIRS['red_wine']}'s constants")
    assert "in_distribution = diamonds_ideal" in message
    for ood, reference in OOD_PAIRS.items():
        assert f"{reference} → {ood}" in message
    # validate_config runs the check (the study's registered check)
    with pytest.raises(ConfigError, match=r"'studies\.ood_proxy\.ood': red_wine is scaled"):
        _validated(paper, {"in_distribution": "diamonds_ideal", "ood": "red_wine"})
    # the other way round too: diamonds_fair is not scaled with White Wine's constants
    with pytest.raises(ConfigError, match=r"diamonds_fair is scaled with diamonds_ideal's"):
        check_ood_pair({**SECTION, "ood": "diamonds_fair"})
