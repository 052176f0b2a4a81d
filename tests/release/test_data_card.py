"""The release's documentation files: CITATION.cff and DATA_CARD.md agree with the package
(version, dataset registry, task-store contract). Fast, no network."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

from postrisk.covariates.registry import registry
from postrisk.tasks.store import OPTIONAL_VARIABLES, POSTERIOR_VARIABLES, SAMPLE_VARIABLES

ROOT = Path(__file__).resolve().parents[2]
NOT_RELEASED = "posterior_draws_train"


@pytest.fixture(scope="module")
def citation() -> dict:
    return yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def card() -> str:
    return (ROOT / "DATA_CARD.md").read_text(encoding="utf-8")


def test_citation_cff_matches_pyproject(citation):
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert citation["cff-version"] == "1.2.0"
    assert citation["title"] == pyproject["project"]["name"] == "postrisk"
    assert str(citation["version"]) == pyproject["project"]["version"]
    assert citation["license"] == "MIT"
    assert citation["authors"]


def test_citation_cff_prefers_the_paper(citation):
    paper = citation["preferred-citation"]
    assert paper["type"] == "article"
    assert paper["title"] == ("A Ground-Truth Framework for Uncertainty Disentanglement with "
                              "Posterior Risk")
    assert paper["year"] == 2026
    assert [a["family-names"] for a in paper["authors"]] == [
        "Wizgall", "Tirpitz", "Seiler", "Ritter", "Mucsányi"]
    assert "doi" not in paper  # none has been assigned; never invent one


def test_data_card_names_every_dataset_and_its_licence(card):
    specs = registry()
    # the dataset table: one row per registry entry (its ten columns tell it from the others)
    rows = [line for line in card.splitlines()
            if re.match(r"\| `\w+` \|", line) and line.count("|") == 11]
    assert sorted(line.split("`")[1] for line in rows) == sorted(specs)
    for spec in specs.values():
        assert spec.display_name in card, spec.name
        assert spec.licence in card, f"{spec.name}: licence {spec.licence!r}"
        assert spec.source.label in card, spec.name


def test_data_card_names_every_released_variable(card):
    variables = {**SAMPLE_VARIABLES, **POSTERIOR_VARIABLES, **OPTIONAL_VARIABLES}
    released = [name for name in variables if name != NOT_RELEASED]
    assert len(released) == len(variables) - 1
    for name in released:
        assert f"`{name}`" in card, name


def test_data_card_says_posterior_draws_train_is_not_released(card):
    assert f"**`{NOT_RELEASED}` is not released.**" in card
    table_rows = [line for line in card.splitlines() if line.startswith(f"| `{NOT_RELEASED}`")]
    assert not table_rows, "posterior_draws_train must not appear as a released variable"


def test_data_card_states_no_release_yet(card):
    assert "no release has been published yet" in card.lower()
    assert "release.base_url" in card
    assert "doi.org" not in card.lower()
