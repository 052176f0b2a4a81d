"""The release's Croissant metadata (``croissant.json``; docs/release.md, "What a release holds")
and the instance index it reads (``instances.csv``), both generated from the manifest.

`Croissant <https://mlcommons.org/croissant/1.0>`_ (MLCommons) is the JSON-LD vocabulary dataset
indexes and the NeurIPS datasets track read; ``mlcroissant`` validates it. The file describes:

- **distribution**: every file of the release as a ``cr:FileObject`` — name, ``contentUrl``
  (relative to the release folder, or under ``release.base_url`` once published), encoding
  format, byte size, sha256 and the licence of the data it holds; the manifest and the index
  besides;
- **record sets**: ``instances``, one record per released instance read from ``instances.csv``
  (its key, where it is packed, its shapes — training rows, evaluation points, features, draws,
  chains — its digest and its dataset's licence); ``variables``, the variables every instance
  holds (name, dimensions, dtype, whether the release ships it), given inline;
- the dataset's name, description (the data card's summary), licences (one per source dataset,
  besides the software's), citation (``citeAs``: the paper's BibTeX), keywords, version and
  dates.

The instances themselves are Zarr groups inside zip files, which Croissant cannot address
below the file: a record points to its file and group, and ``postrisk.load_task`` opens it.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence

from postrisk.tasks.store import OPTIONAL_VARIABLES, POSTERIOR_VARIABLES, SAMPLE_VARIABLES

CONFORMS_TO = "http://mlcommons.org/croissant/1.0"
#: The JSON-LD context Croissant 1.0 prescribes (its specification, appendix 1).
CONTEXT = {
    "@language": "en", "@vocab": "https://schema.org/", "sc": "https://schema.org/",
    "cr": "http://mlcommons.org/croissant/", "rai": "http://mlcommons.org/croissant/RAI/",
    "dct": "http://purl.org/dc/terms/", "citeAs": "cr:citeAs", "column": "cr:column",
    "conformsTo": "dct:conformsTo", "data": {"@id": "cr:data", "@type": "@json"},
    "equivalentProperty": "cr:equivalentProperty", "samplingRate": "cr:samplingRate",
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "examples": {"@id": "cr:examples", "@type": "@json"}, "extract": "cr:extract",
    "field": "cr:field", "fileObject": "cr:fileObject", "fileProperty": "cr:fileProperty",
    "fileSet": "cr:fileSet", "format": "cr:format", "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset", "jsonPath": "cr:jsonPath", "key": "cr:key",
    "md5": "cr:md5", "parentField": "cr:parentField", "path": "cr:path",
    "recordSet": "cr:recordSet", "references": "cr:references", "regex": "cr:regex",
    "repeated": "cr:repeated", "replace": "cr:replace", "separator": "cr:separator",
    "source": "cr:source", "subField": "cr:subField", "transform": "cr:transform",
}
#: The index's columns: (name, Croissant data type, description).
INDEX_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("key", "sc:Text", "the instance key dataset/prior/noise/coverage/seed"),
    ("dataset", "sc:Text", "the source dataset of the covariates"),
    ("prior", "sc:Text", "the prior over functions the targets were drawn from"),
    ("noise", "sc:Text", "the noise mode"),
    ("coverage", "sc:Text", "the coverage scenario (balanced or ood)"),
    ("seed", "sc:Integer", "the instance's seed"),
    ("file", "sc:Text", "the packed file holding the instance"),
    ("group", "sc:Text", "the instance's Zarr group inside that file"),
    ("n_train", "sc:Integer", "training rows"),
    ("n_eval", "sc:Integer", "evaluation points"),
    ("features", "sc:Integer", "covariate columns"),
    ("draws", "sc:Integer", "reference-posterior draws at each evaluation point"),
    ("chains", "sc:Integer", "MCMC chains the draws come from (1: exact or independent)"),
    ("bytes", "sc:Integer", "the group's size in bytes"),
    ("sha256", "sc:Text", "the digest of the group's members (see the manifest)"),
    ("licence", "sc:Text", "the licence of the source dataset"),
)
_ENCODING = {".zip": "application/zip", ".json": "application/json", ".csv": "text/csv",
             ".md": "text/markdown", ".cff": "application/x-yaml"}


def index_rows(manifest: Mapping) -> list[dict]:
    """One row of :data:`INDEX_COLUMNS` per released instance of ``manifest``."""
    return [{name: entry[name] for name, _, _ in INDEX_COLUMNS} for entry in manifest["instances"]]


def index_csv(manifest: Mapping) -> str:
    """``instances.csv``: :func:`index_rows` as CSV text."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=[name for name, _, _ in INDEX_COLUMNS],
                            lineterminator="\n")
    writer.writeheader()
    writer.writerows(index_rows(manifest))
    return out.getvalue()


def variable_rows(released_without: Sequence[str]) -> list[dict]:
    """The variables of a released instance: name, dimensions, dtype and whether shipped."""
    every = {**SAMPLE_VARIABLES, **POSTERIOR_VARIABLES, **OPTIONAL_VARIABLES}
    return [{"variables/name": name, "variables/dims": ",".join(dims),
             "variables/dtype": dtype, "variables/released": name not in released_without,
             "variables/only_with_chains": name in OPTIONAL_VARIABLES}
            for name, (dims, dtype) in every.items()]


def _file_object(entry: Mapping, base_url: str) -> dict:
    name = entry["name"]
    suffix = name[name.rfind("."):] if "." in name else ""
    obj = {"@type": "cr:FileObject", "@id": name, "name": name,
           "contentUrl": f"{base_url.rstrip('/')}/{name}" if base_url else name,
           "encodingFormat": _ENCODING.get(suffix, "application/octet-stream"),
           "contentSize": f"{int(entry['bytes'])} B", "sha256": entry["sha256"]}
    if entry.get("licence"):
        obj["license"] = entry["licence"]
    return obj


def croissant_metadata(manifest: Mapping, extra_files: Sequence[Mapping], *, name: str,
                       description: str, citation: str, url: str, version: str,
                       base_url: str | None = None, software_licence: str = "MIT") -> dict:
    """The Croissant JSON-LD of a release: ``manifest``'s files and ``extra_files`` (entries
    of the same form — name, bytes, sha256 — for the manifest and the index) as file objects,
    the ``instances`` record set read from the index and the ``variables`` one inline."""
    base = base_url or ""
    files = [*manifest["files"], *extra_files]
    licences = sorted({f["licence"] for f in manifest["files"]
                       if f.get("kind") in ("instances", "dataset") and f.get("licence")})
    fields = [{"@type": "cr:Field", "@id": f"instances/{column}", "name": column,
               "description": text, "dataType": kind,
               "source": {"fileObject": {"@id": "instances.csv"},
                          "extract": {"column": column}}}
              for column, kind, text in INDEX_COLUMNS]
    variables = [
        {"@type": "cr:Field", "@id": f"variables/{column}", "name": column, "dataType": kind,
         "description": text}
        for column, kind, text in (
            ("name", "sc:Text", "the variable's name in each instance's Zarr group"),
            ("dims", "sc:Text", "its dimensions (train: rows, eval: points, draw, feature)"),
            ("dtype", "sc:Text", "its NumPy dtype (f8, f4, i8, i4, i1, b1)"),
            ("released", "sc:Boolean", "whether the release ships it"),
            ("only_with_chains", "sc:Boolean", "present only where the draws have chains"))]
    return {
        "@context": CONTEXT, "@type": "sc:Dataset", "conformsTo": CONFORMS_TO,
        "name": name, "description": description, "url": url, "version": version,
        "license": [software_licence, *licences], "citeAs": citation,
        "datePublished": manifest["created"][:10], "isAccessibleForFree": True,
        "keywords": ["uncertainty quantification", "aleatoric uncertainty",
                     "epistemic uncertainty", "reference posterior", "regression", "benchmark"],
        "creator": {"@type": "sc:Organization", "name": "The postrisk contributors"},
        "distribution": [_file_object(f, base) for f in files],
        "recordSet": [
            {"@type": "cr:RecordSet", "@id": "instances", "name": "instances",
             "description": "One record per released instance: its key, where it is packed "
                            "(file and Zarr group), its shapes and its digest.",
             "key": {"@id": "instances/key"}, "field": fields},
            {"@type": "cr:RecordSet", "@id": "variables", "name": "variables",
             "description": "The variables of every instance's Zarr group.",
             "key": {"@id": "variables/name"}, "field": variables,
             "data": variable_rows(manifest.get("released_without", ()))},
        ],
    }


# -- the file -----------------------------------------------------------------------------------

def data_card_summary(text: str) -> str:
    """The first paragraph under a data card's ``## Summary`` (else its first paragraph)."""
    body = text.split("## Summary", 1)[-1]
    paragraphs = [p.strip() for p in body.split("\n\n") if p.strip() and not p.startswith("#")]
    return " ".join(paragraphs[0].split()) if paragraphs else ""


def citation_text(cff: Mapping) -> str:
    """A citation line from a CITATION.cff's ``preferred-citation`` (else the file's own
    title, version and authors)."""
    ref = cff.get("preferred-citation") or cff
    people = [" ".join(filter(None, (a.get("given-names"), a.get("family-names")))) or
              a.get("name", "") for a in ref.get("authors", [])]
    ids = [i.get("value") for i in ref.get("identifiers", []) if i.get("value")]
    parts = [", ".join(people), f"({ref['year']})" if ref.get("year") else "",
             f"{ref.get('title', '')}.", *(f"{i}." for i in ids)]
    return " ".join(p for p in parts if p)


def paper_url(cff: Mapping) -> str:
    """The address of the paper the suite reproduces (its arXiv identifier in the citation
    file), the dataset's ``url`` until the release has one of its own."""
    ref = cff.get("preferred-citation") or {}
    for ident in ref.get("identifiers", []):
        value = str(ident.get("value", ""))
        if value.startswith("arXiv:"):
            return f"https://arxiv.org/abs/{value.removeprefix('arXiv:')}"
        if value.startswith("http"):
            return value
    return "https://arxiv.org/"


def write_croissant(out_dir, manifest: Mapping, documents: Sequence, base_url: str | None):
    """Write ``croissant.json`` into ``out_dir`` for ``manifest`` (already written there), its
    description from the data card and its citation from the citation file among
    ``documents`` (where present)."""
    import json
    from pathlib import Path

    import yaml

    from postrisk.core.download import file_sha256
    from postrisk.core.io import package_version, write_text_atomic
    from postrisk.release import CROISSANT, MANIFEST

    out_dir = Path(out_dir)
    by_name = {Path(d).name: Path(d) for d in documents}
    card = by_name.get("DATA_CARD.md")
    cff = yaml.safe_load(by_name["CITATION.cff"].read_text()) if "CITATION.cff" in by_name else {}
    manifest_file = out_dir / MANIFEST
    metadata = croissant_metadata(
        manifest, [{"name": MANIFEST, "bytes": manifest_file.stat().st_size,
                    "sha256": file_sha256(manifest_file)}],
        name="postrisk task suite",
        description=(data_card_summary(card.read_text()) if card else "")
        or "Semi-synthetic regression tasks with known aleatoric and epistemic uncertainty.",
        citation=citation_text(cff) or "postrisk", url=base_url or paper_url(cff),
        version=str(manifest.get("package_version") or package_version()), base_url=base_url)
    write_text_atomic(out_dir / CROISSANT, json.dumps(metadata, indent=2) + "\n")
    return out_dir / CROISSANT
