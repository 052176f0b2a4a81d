"""The release's Croissant metadata: mlcroissant (what dataset indexes and the NeurIPS datasets
track run) validates it, its files carry the manifest's checksums and licences, and its
``instances`` record set reads the index back as the manifest's instances."""

from __future__ import annotations

import json
import warnings

import pytest

from postrisk.core.download import file_sha256
from postrisk.release import CROISSANT, INDEX, MANIFEST
from postrisk.release.croissant import citation_text, data_card_summary
from tests.release.release_helpers import KEYS

mlc = pytest.importorskip("mlcroissant")


def _dataset(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mlc.Dataset(jsonld=str(path))


def test_mlcroissant_validates_it_and_reads_the_instances(release):
    out, manifest = release
    dataset = _dataset(out / CROISSANT)  # raises mlcroissant.ValidationError on any error
    assert not dataset.metadata.ctx.issues.errors and not dataset.metadata.ctx.issues.warnings
    assert [r.name for r in dataset.metadata.record_sets] == ["instances", "variables"]
    records = list(dataset.records(record_set="instances"))
    keys = [r["instances/key"].decode() for r in records]
    assert keys == [i["key"] for i in manifest["instances"]] and len(keys) == len(KEYS)
    first = records[0]
    entry = manifest["instances"][0]
    assert (first["instances/n_eval"], first["instances/draws"]) == (entry["n_eval"],
                                                                    entry["draws"])
    assert first["instances/group"].decode() == entry["group"]
    names = {r["variables/name"] for r in dataset.records(record_set="variables")}
    assert {"posterior_draws", "f_true_eval", "rhat"} <= {n.decode() if isinstance(n, bytes)
                                                          else n for n in names}


def test_its_files_are_the_manifests_with_their_checksums_and_licences(release):
    out, manifest = release
    meta = json.loads((out / CROISSANT).read_text())
    files = {f["name"]: f for f in meta["distribution"]}
    assert set(files) == {f["name"] for f in manifest["files"]} | {MANIFEST}
    for entry in manifest["files"]:
        assert files[entry["name"]]["sha256"] == entry["sha256"]
        assert files[entry["name"]]["contentSize"] == f"{entry['bytes']} B"
    assert files[MANIFEST]["sha256"] == file_sha256(out / MANIFEST)
    assert files["concrete_gp.zip"]["license"].startswith("CC BY 4.0")
    assert files["concrete_gp.zip"]["encodingFormat"] == "application/zip"
    assert files[INDEX]["encodingFormat"] == "text/csv"
    licences = {f["licence"] for f in manifest["files"] if f["kind"] == "instances"}
    assert licences <= set(meta["license"]) and "MIT" in meta["license"]
    assert meta["conformsTo"] == "http://mlcommons.org/croissant/1.0"


def test_the_description_and_citation_come_from_the_data_card_and_cff():
    card = "# Data card\n\n## Summary\n\nThe suite is a set of\ntasks.\n\nMore.\n"
    assert data_card_summary(card) == "The suite is a set of tasks."
    cff = {"title": "postrisk", "preferred-citation": {
        "title": "A Paper", "year": 2026, "identifiers": [{"type": "other", "value": "arXiv:1"}],
        "authors": [{"given-names": "A", "family-names": "B"}, {"name": "C team"}]}}
    assert citation_text(cff) == "A B, C team (2026) A Paper. arXiv:1."


def test_the_context_is_the_standard_one(release):
    """mlcroissant's command line warns when the JSON-LD context differs from the standard
    Croissant 1.0 context; ours is that context."""
    from mlcroissant._src.core.rdf import make_context

    out, _ = release
    meta = json.loads((out / CROISSANT).read_text())
    assert meta["@context"] == make_context()
