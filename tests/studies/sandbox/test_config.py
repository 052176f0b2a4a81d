"""Config ``studies.sandbox`` (postrisk.studies.sandbox.config): its schema — every key and
every key of its sub-sections required, no other key, each value's range at its boundaries —,
the check that the domain runs upwards and holds the gap's and the noise bump's centres,
whether the study runs (``run``) and what its summary takes (the section without ``run``, as
the grid's settings hook passes it); through validate_config, a bad section is refused with a
message naming the key, and a partial one is completed from config.yaml.

The sandbox built from such a section: tests/studies/test_sandbox.py and
tests/studies/test_sandbox_report.py."""

from __future__ import annotations

import copy
from functools import partial

import jsonschema
import pytest

from postrisk.grid.config import ConfigError
from postrisk.grid.study import study, study_settings
from postrisk.studies.sandbox.config import (
    check_sandbox,
    sandbox_runs,
    sandbox_schema,
    summary_settings,
)
from tests.studies.config_helpers import validated_study

#: A valid section of its own (not config.yaml's numbers).
SECTION = {"run": False, "seed": 3, "domain": [-1.0, 2.0], "grid_points": 101,
           "features": {"count": 8, "offset": 0.5, "width": 2.0}, "prior_sd": 1.5,
           "noise": {"low": 0.2, "high": 0.5, "centre": 1.5, "width": 0.3},
           "training": {"n": 30, "gap_centre": -0.5, "gap_width": 0.1, "gap_depth": 0.5},
           "coverage": 0.5, "lambdas": 3}
SUBSECTIONS = ("features", "noise", "training")


def _errors(section) -> list[jsonschema.ValidationError]:
    return list(jsonschema.Draft202012Validator(sandbox_schema()).iter_errors(section))


#: ``_validated(paper, change)``: ``change`` to ``studies.sandbox`` over config.yaml, validated.
_validated = partial(validated_study, "sandbox")


def _with(**changes) -> dict:
    """SECTION with ``changes`` (``training__n=5``: a key of a sub-section)."""
    out = copy.deepcopy(SECTION)
    for name, value in changes.items():
        *parents, key = name.split("__")
        target = out
        for parent in parents:
            target = target[parent]
        target[key] = value
    return out


# ---------------------------------------------------------------------------------- schema

def test_a_valid_section_passes_the_schema_and_the_check(paper):
    assert _errors(SECTION) == []
    check_sandbox(SECTION)
    assert _validated(paper, SECTION)["studies"]["sandbox"] == SECTION
    assert _errors(paper["studies"]["sandbox"]) == []  # config.yaml's own
    check_sandbox(paper["studies"]["sandbox"])
    # the schema takes the method names as every study's does, and needs none of them
    assert sandbox_schema(("blr", "gp")) == sandbox_schema()


def test_a_partial_section_is_completed_from_config_yaml(paper):
    defaults = paper["studies"]["sandbox"]
    got = _validated(paper, {"lambdas": 5, "training": {"n": 40}})["studies"]["sandbox"]
    assert got == {**defaults, "lambdas": 5, "training": {**defaults["training"], "n": 40}}


def test_every_key_is_required_at_every_level():
    for key in SECTION:
        section = {k: v for k, v in SECTION.items() if k != key}
        assert [e.message for e in _errors(section)] == [f"'{key}' is a required property"]
    for sub in SUBSECTIONS:
        for key in SECTION[sub]:
            section = copy.deepcopy(SECTION)
            del section[sub][key]
            (error,) = _errors(section)
            assert error.message == f"'{key}' is a required property"
            assert list(error.absolute_path) == [sub]


#: (a change to a valid section, the key the message names, what it says).
BAD = [
    ({"grid_point": 101}, "studies.sandbox", r"unknown key\(s\) \['grid_point'\]"),
    ({"features": {"widht": 1.0}}, "studies.sandbox.features",
     r"unknown key\(s\) \['widht'\]; allowed keys: count, offset, width"),
    ({"run": "yes"}, "studies.sandbox.run", "not of type 'boolean'"),
    ({"seed": -1}, "studies.sandbox.seed", "-1 must be"),
    ({"domain": [0.0]}, "studies.sandbox.domain", "too short"),
    ({"domain": [0.0, 1.0, 2.0]}, "studies.sandbox.domain", "too long"),
    ({"grid_points": 20}, "studies.sandbox.grid_points", "20 must be"),
    ({"features": {"count": 1}}, "studies.sandbox.features.count", "1 must be"),
    ({"features": {"offset": 0}}, "studies.sandbox.features.offset", "0 must be"),
    ({"prior_sd": 0.0}, "studies.sandbox.prior_sd", "0.0 must be"),
    ({"noise": {"low": -0.1}}, "studies.sandbox.noise.low", "-0.1 must be"),
    ({"noise": {"width": 0}}, "studies.sandbox.noise.width", "0 must be"),
    ({"training": {"n": 0}}, "studies.sandbox.training.n", "0 must be"),
    ({"training": {"gap_width": 0}}, "studies.sandbox.training.gap_width", "0 must be"),
    ({"training": {"gap_depth": 0}}, "studies.sandbox.training.gap_depth", "0 must be"),
    ({"training": {"gap_depth": 1.5}}, "studies.sandbox.training.gap_depth",
     "greater than the maximum of 1"),
    ({"coverage": 0}, "studies.sandbox.coverage", "0 must be"),
    ({"coverage": 1}, "studies.sandbox.coverage", "greater than or equal to the maximum of 1"),
    ({"lambdas": 1}, "studies.sandbox.lambdas", "1 must be"),
    ({"lambdas": 2.5}, "studies.sandbox.lambdas", "not of type 'integer'"),
]


def _id(change) -> str:
    (key, value), = change.items()
    return f"{key}={value}" if not isinstance(value, dict) else f"{key}.{_id(value)}"


@pytest.mark.parametrize(("change", "key", "what"), BAD, ids=[_id(c) for c, _, _ in BAD])
def test_a_bad_value_is_refused_with_a_message_naming_the_key(paper, change, key, what):
    with pytest.raises(ConfigError, match=rf"config key '{key}': .*{what}"):
        _validated(paper, change)


def test_the_boundary_values_are_allowed():
    for change in ({"seed": 0}, {"grid_points": 21}, {"features__count": 2},
                   {"training__n": 1}, {"training__gap_depth": 1}, {"lambdas": 2},
                   {"coverage": 0.999}, {"coverage": 0.001}, {"features__offset": 1e-9},
                   {"noise__centre": -1.0}, {"training__gap_centre": 2.0}):
        assert _errors(_with(**change)) == [], change


# ----------------------------------------------------------------------------------- check

@pytest.mark.parametrize("domain", [[1.0, 0.0], [0.5, 0.5]])
def test_a_domain_that_does_not_run_upwards_is_refused(paper, domain):
    assert _errors(_with(domain=domain)) == []  # a schema cannot say it
    with pytest.raises(ConfigError, match=rf"^config key 'studies\.sandbox\.domain': "
                                          rf"\[{domain[0]}, {domain[1]}\] must run upwards"):
        check_sandbox(_with(domain=domain))
    with pytest.raises(ConfigError, match=r"'studies\.sandbox\.domain': .* must run upwards"):
        _validated(paper, {"domain": domain})


@pytest.mark.parametrize(("key", "value"), [("training__gap_centre", -1.01),
                                            ("training__gap_centre", 2.5),
                                            ("noise__centre", -3.0), ("noise__centre", 2.01)])
def test_a_centre_outside_the_domain_is_refused(key, value):
    dotted = key.replace("__", ".")
    with pytest.raises(ConfigError, match=rf"^config key 'studies\.sandbox\.{dotted}': "
                                          rf"{value} lies outside the domain \[-1\.0, 2\.0\]$"):
        check_sandbox(_with(**{key: value}))


def test_centres_on_the_domains_ends_are_inside():
    for lo_or_hi in (-1.0, 2.0):
        check_sandbox(_with(training__gap_centre=lo_or_hi, noise__centre=lo_or_hi))


def test_the_centres_are_checked_against_the_configured_domain(paper):
    # config.yaml's centres lie in [0, 1]: a domain moved away leaves them outside
    centre = paper["studies"]["sandbox"]["training"]["gap_centre"]
    assert 0.0 <= centre <= 1.0
    with pytest.raises(ConfigError, match=rf"'studies\.sandbox\.training\.gap_centre': "
                                          rf"{centre} lies outside the domain \[2\.0, 3\.0\]"):
        _validated(paper, {"domain": [2.0, 3.0]})
    moved = {"domain": [2.0, 3.0], "training": {"gap_centre": 2.5}, "noise": {"centre": 2.9}}
    assert _validated(paper, moved)["studies"]["sandbox"]["domain"] == [2.0, 3.0]


# ------------------------------------------------------------------ runs, summary settings

def test_run_says_whether_the_sandbox_is_planned():
    assert sandbox_runs(_with(run=True)) is True
    assert sandbox_runs(_with(run=False)) is False
    assert sandbox_runs({}) is False  # a configuration without the section


def test_the_summary_takes_the_section_without_run():
    section = _with(run=True)
    before = copy.deepcopy(section)
    got = summary_settings(section)
    assert got == {k: v for k, v in SECTION.items() if k != "run"}
    assert section == before  # the section itself is left as it is
    # whether `all` plans the sandbox does not change what it builds (nor its params)
    assert summary_settings(_with(run=False)) == got
    assert summary_settings(_with(lambdas=4)) != got
    assert summary_settings({}) == {}


def test_the_grid_calls_the_hooks_with_the_configured_section(paper):
    sandbox = study("sandbox")
    for run in (True, False):
        cfg = _validated(paper, {**SECTION, "run": run})
        section = study_settings(cfg, "sandbox")
        assert sandbox.runs(section) is run
        assert sandbox.settings(section) == {k: v for k, v in SECTION.items() if k != "run"}
    # no section: the study does not run and its summary takes nothing
    assert sandbox.runs(study_settings({}, "sandbox")) is False
    assert sandbox.settings(study_settings({"studies": None}, "sandbox")) == {}
