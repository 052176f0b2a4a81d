"""``postrisk.grid.schema``, checked with jsonschema directly (validate_config's messages are
tests/grid/test_config.py's): the building blocks (names, positive integers), the release
section standing alone, the method list a schema is built for, the narrowings, the cost model's
per-stage entries, studies and group_by — valid documents pass, an invalid one fails at the
offending key."""
import copy

import jsonschema
import pytest

from postrisk.grid.schema import (
    SECTION_SCHEMAS,
    config_schema,
    names_schema,
    positive_int_schema,
    release_schema,
)
from postrisk.grid.stages import BENCHMARK_STAGES, STUDIES_PAGE, stages
from postrisk.grid.vocabulary import METHODS


def _errors(schema: dict, doc) -> list[jsonschema.ValidationError]:
    return list(jsonschema.Draft202012Validator(schema).iter_errors(doc))


def _where(schema: dict, doc) -> tuple[str, str]:
    """The best-matching error's key path ("a.b[0]") and message; fails if ``doc`` is valid."""
    errors = _errors(schema, doc)
    assert errors, f"{doc!r} passed"
    best = jsonschema.exceptions.best_match(errors)
    return best.json_path.removeprefix("$."), best.message


def test_names_are_a_nonempty_list_of_distinct_known_names():
    schema = {"type": "object", "properties": {"axis": names_schema(("a", "b", "c"))}}
    assert not _errors(schema, {"axis": ["c", "a"]})
    assert _where(schema, {"axis": ["a", "z"]})[0] == "axis[1]"
    path, message = _where(schema, {"axis": []})
    assert path == "axis" and "should be non-empty" in message
    path, message = _where(schema, {"axis": ["b", "b"]})
    assert path == "axis" and "non-unique" in message


@pytest.mark.parametrize("value, ok", [(1, True), (10 ** 12, True), (0, False), (-3, False),
                                       (2.5, False), ("4", False), (None, False)])
def test_positive_int(value, ok):
    assert (not _errors(positive_int_schema(), value)) is ok


RELEASE = {"base_url": "https://example.org/suite", "download_dir": "resources/release",
           "datasets": ["concrete"], "priors": ["gp", "bnn"], "max_bytes": 10 ** 9,
           "max_files": 10, "retries": 3, "timeout_s": 0.5}


@pytest.mark.parametrize("key, value", [
    ("base_url", "ftp://example.org"), ("base_url", "example.org"), ("download_dir", ""),
    ("datasets", ["concrete", "no_such_dataset"]), ("priors", []), ("max_bytes", 0),
    ("retries", 0), ("timeout_s", 0), ("timeout_s", "60"),
])
def test_release_section_bad_value_fails_at_its_key(key, value):
    schema = {"type": "object", "properties": {"release": release_schema()}}
    assert not _errors(schema, {"release": RELEASE})
    assert not _errors(schema, {"release": dict(RELEASE, base_url=None, datasets=None,
                                                priors=None)})
    path, _ = _where(schema, {"release": dict(RELEASE, **{key: value})})
    assert path.startswith(f"release.{key}")


def test_release_section_missing_and_unknown_keys_are_named():
    _, message = _where(release_schema(), {k: v for k, v in RELEASE.items() if k != "retries"})
    assert message == "'retries' is a required property"
    _, message = _where(release_schema(), dict(RELEASE, retry=3))
    assert "'retry' was unexpected" in message


def test_sections_read_alone_have_the_schema_they_have_in_the_config():
    """read_section checks a section against SECTION_SCHEMAS, validate_config against the whole
    schema: the two must agree."""
    whole = config_schema()
    jsonschema.Draft202012Validator.check_schema(whole)
    for name, schema in SECTION_SCHEMAS.items():
        assert whole["properties"][name] == schema()


def test_method_names_come_from_the_list_the_schema_is_built_for(paper):
    """An outside method ("mine") may be listed, narrowed and set once the schema is built
    with it; a schema built without it refuses it at each of those keys."""
    doc = copy.deepcopy(paper)
    doc.update(methods=["blr", "mine"], method_grid={"mine": {"priors": ["gp"]}},
               method_settings={"mine": {"width": 3}},
               tuning=dict(doc["tuning"], methods=["mine"]))
    assert not _errors(config_schema((*METHODS, "mine")), doc)
    for key in ("methods", "method_grid", "method_settings", "tuning"):
        one = dict(copy.deepcopy(paper), **{key: doc[key]})
        path, message = _where(config_schema(METHODS), one)
        assert path.startswith(key) and "'mine'" in message


def test_a_prior_grid_narrows_other_axes_but_not_priors(paper):
    schema = config_schema()
    narrowed = {"noise_modes": ["bump"], "coverages": ["ood"], "datasets": ["concrete"]}
    assert not _errors(schema, dict(paper, prior_grid={"gp": narrowed}))
    path, message = _where(schema, dict(paper, prior_grid={"gp": {"priors": ["gp"]}}))
    assert path == "prior_grid.gp" and "'priors' was unexpected" in message
    assert _where(schema, dict(paper, prior_grid={"gpp": narrowed}))[0] == "prior_grid"
    assert not _errors(schema, dict(paper, method_grid={"blr": {"priors": ["gp"]}}))


def _cost_model(cfg: dict, **stages) -> dict:
    return dict(cfg, cost_model=dict(copy.deepcopy(cfg["cost_model"]), **stages))


def test_cost_model_entries_per_prior_or_method_only_where_the_cost_depends_on_them(paper):
    schema = config_schema()
    entry = {"threads": 1, "minutes": 2.0, "mem_mb": 500}
    assert not _errors(schema, _cost_model(paper, fit={"default": entry, "gp": entry}))
    assert not _errors(schema, _cost_model(paper, prior=entry))  # one entry for all is fine
    path, _ = _where(schema, _cost_model(paper, fit={"gp": entry}))  # no default
    assert path == "cost_model.fit"
    # the score's cost depends on neither: a per-method mapping is refused there
    assert _errors(schema, _cost_model(paper, score={"default": entry, "gp": entry}))
    path, message = _where(schema, _cost_model(paper, score={"threads": 1, "minutes": 2.0}))
    assert path == "cost_model.score" and "'mem_mb' is a required property" in message
    assert _where(schema, _cost_model(paper, score=dict(entry, threads=0)))[0] == \
        "cost_model.score.threads"


@pytest.mark.parametrize("measured, ok", [("2026-12-03, an H100", True), (False, True),
                                          (True, False), ("", False)])
def test_a_gpu_cost_says_where_it_comes_from(paper, measured, ok):
    entry = {"threads": 1, "minutes": 2.0, "mem_mb": 500,
             "gpu": {"minutes": 0.5, "measured": measured}}
    assert (not _errors(config_schema(), _cost_model(paper, score=entry))) is ok


def test_cost_model_requires_the_benchmark_stages_but_not_a_studys(paper):
    schema = config_schema()
    study_stage = next(s for s in stages() if s not in (*BENCHMARK_STAGES, STUDIES_PAGE))
    without = copy.deepcopy(paper)
    del without["cost_model"][study_stage]  # a study's stage: its declared cost applies
    assert not _errors(schema, without)
    del without["cost_model"]["score"]
    path, message = _where(schema, without)
    assert path == "cost_model" and "'score' is a required property" in message


def test_studies_and_group_by_accept_only_known_names(paper):
    schema = config_schema()
    path, message = _where(schema, dict(paper, studies={"no_such_study": {}}))
    assert path == "studies" and "'no_such_study' was unexpected" in message
    assert not _errors(schema, dict(paper, group_by={"fit": ["method", "dataset"]}))
    assert _where(schema, dict(paper, group_by={"score": ["method"]}))[0] == "group_by"
    assert _where(schema, dict(paper, group_by={"fit": ["seed"]}))[0] == "group_by.fit[0]"
    assert _where(schema, dict(paper, group_by={"fit": ["method", "method"]}))[0] == \
        "group_by.fit"
