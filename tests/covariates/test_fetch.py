"""Fetching against a real HTTP server on loopback: download, parse, cache, checksums, offline."""

import dataclasses
import hashlib
import json
import socket

import numpy as np
import pytest

from postrisk.covariates import (
    ChecksumMismatch,
    CovariateSourceUnavailable,
    FetchSettings,
    covariates_from_raw,
    get_dataset,
    load_raw_table,
    raw_path,
)
from tests.http_fixture import FakeSources

DIAMONDS_ARFF = """% diamonds, a few rows in OpenML's ARFF layout
@RELATION diamonds

@ATTRIBUTE carat NUMERIC
@ATTRIBUTE cut {'Fair','Good','Very Good','Premium','Ideal'}
@ATTRIBUTE color {D,E,F,G,H,I,J}
@ATTRIBUTE clarity {I1,SI2,SI1,VS2,VS1,VVS2,VVS1,IF}
@ATTRIBUTE depth NUMERIC
@ATTRIBUTE 'table' NUMERIC
@ATTRIBUTE price NUMERIC
@ATTRIBUTE x NUMERIC
@ATTRIBUTE y NUMERIC
@ATTRIBUTE z NUMERIC

@DATA
0.23,Ideal,E,SI2,61.5,55,326,3.95,3.98,2.43
0.21,Premium,E,SI1,59.8,61,326,3.89,3.84,2.31
0.23,Good,E,VS1,56.9,65,327,4.05,4.07,2.31
% a comment line inside the data
0.29,'Very Good',I,VS2,62.4,58,334,4.2,4.23,2.63
0.31,Good,J,SI2,?,58,335,4.34,4.35,2.75
0.24,'Very Good',J,VVS2,62.8,57,336,3.94,3.96,2.48
"""

ABALONE_CSV = """\
Sex,Length,Diameter,Height,Whole_weight,Shucked_weight,Viscera_weight,Shell_weight,Rings
M,0.455,0.365,0.095,0.514,0.2245,0.101,0.15,15
M,0.35,0.265,0.09,0.2255,0.0995,0.0485,0.07,7
F,0.53,0.42,0.135,0.677,0.2565,0.1415,0.21,9
M,0.44,0.365,0.125,0.516,0.2155,0.114,0.155,10
I,0.33,0.255,0.08,0.205,0.0895,0.0395,0.055,7
"""


def openml_routes(server, arff: bytes, md5: str | None = None):
    md5 = md5 or hashlib.md5(arff).hexdigest()
    desc = {"data_set_description": {
        "id": "44979", "name": "diamonds", "file_id": "22111853", "format": "ARFF",
        "url": f"{server.url}/data/v1/download/22111853/diamonds.arff",
        "md5_checksum": md5, "default_target_attribute": "price"}}
    server.routes["/api/v1/json/data/44979"] = json.dumps(desc).encode()
    server.routes["/data/v1/download/22111853/diamonds.arff"] = arff


def uci_routes(server):
    meta = {"status": 200, "statusCode": 200,
            "data": {"uci_id": 1, "name": "Abalone",
                     "data_url": f"{server.url}/static/public/1/data.csv"}}
    server.routes["/api/dataset?id=1"] = json.dumps(meta).encode()
    server.routes["/static/public/1/data.csv"] = ABALONE_CSV.encode()


def settings(tmp_path, server_url="http://127.0.0.1:9", **kw):
    base = dict(raw_dir=tmp_path / "raw", openml_url=server_url, uci_url=server_url,
                retries=2, timeout_s=5)
    base.update(kw)
    return FetchSettings(**base)


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # nothing listens there once the socket is closed


def test_openml_download_parse_and_cache(tmp_path):
    spec = get_dataset("diamonds")
    with FakeSources() as server:
        openml_routes(server, DIAMONDS_ARFF.encode())
        cfg = settings(tmp_path, server.url)
        raw = load_raw_table(spec, cfg)
        assert raw.origin == "download"
        assert list(raw.frame.columns)[:3] == ["carat", "cut", "color"]
        assert raw.frame["cut"].tolist()[3] == "Very Good"
        assert np.isnan(raw.frame["depth"].iloc[4])
        path = raw_path(spec, cfg.raw_dir)
        assert path.read_bytes() == DIAMONDS_ARFF.encode()
        record = json.loads(path.with_name(path.name + ".json").read_text())
        assert record["sha256"] == hashlib.sha256(DIAMONDS_ARFF.encode()).hexdigest()
        hits = sum(server.hits.values())
        again = load_raw_table(spec, cfg)
        assert again.origin == "cache" and sum(server.hits.values()) == hits
    ds = covariates_from_raw(spec, raw, n_eval_cap=2)
    assert ds.sizes["feature"] == 6 and ds.sizes["row"] == 5  # the row with '?' is removed


def test_uci_download_and_cleaning(tmp_path):
    spec = get_dataset("abalone")
    with FakeSources() as server:
        uci_routes(server)
        raw = load_raw_table(spec, settings(tmp_path, server.url))
    ds = covariates_from_raw(spec, raw, n_eval_cap=2)
    assert list(ds["feature"].values) == list(spec.columns)  # Sex is outside the column list
    assert ds.sizes["row"] == 5
    np.testing.assert_allclose(ds["target"].values, [15, 7, 9, 10, 7])


def test_server_md5_mismatch_refused(tmp_path):
    spec = get_dataset("diamonds")
    with FakeSources() as server:
        openml_routes(server, DIAMONDS_ARFF.encode(), md5="0" * 32)
        cfg = settings(tmp_path, server.url)
        with pytest.raises(ChecksumMismatch, match="md5"):
            load_raw_table(spec, cfg)
    assert not raw_path(spec, cfg.raw_dir).exists(), "a refused download must not be cached"


def test_pinned_sha256_mismatch_refused(tmp_path):
    spec = dataclasses.replace(get_dataset("diamonds"), sha256="f" * 64)
    with FakeSources() as server:
        openml_routes(server, DIAMONDS_ARFF.encode())
        with pytest.raises(ChecksumMismatch, match="pins"):
            load_raw_table(spec, settings(tmp_path, server.url))


def test_corrupted_cache_refused(tmp_path):
    spec = get_dataset("diamonds")
    with FakeSources() as server:
        openml_routes(server, DIAMONDS_ARFF.encode())
        cfg = settings(tmp_path, server.url)
        load_raw_table(spec, cfg)
    path = raw_path(spec, cfg.raw_dir)
    path.write_bytes(path.read_bytes().replace(b"0.23", b"9.99"))
    with pytest.raises(ChecksumMismatch, match="changed or is corrupt"):
        load_raw_table(spec, cfg)


def test_retries_then_success_and_final_404(tmp_path):
    spec = get_dataset("abalone")
    with FakeSources() as server:
        uci_routes(server)
        server.failures["/api/dataset?id=1"] = [503]
        raw = load_raw_table(spec, settings(tmp_path, server.url, retries=2))
        assert raw.origin == "download" and server.hits["/api/dataset?id=1"] == 2
    spec = get_dataset("airfoil")  # not served: 404 is final, no retries
    with FakeSources() as server:
        with pytest.raises(CovariateSourceUnavailable, match="HTTP 404"):
            load_raw_table(spec, settings(tmp_path, server.url, retries=3))
        assert server.hits["/api/dataset?id=291"] == 1


def test_offline_without_copy_names_dataset_url_and_path(tmp_path):
    spec = get_dataset("kin8nm")
    url = closed_port_url()
    cfg = settings(tmp_path, url)
    with pytest.raises(CovariateSourceUnavailable) as err:
        load_raw_table(spec, cfg)
    message = str(err.value)
    assert "'kin8nm'" in message
    assert f"{url}/api/v1/json/data/44980" in message
    assert str(raw_path(spec, cfg.raw_dir)) in message


def test_user_placed_file_wins(tmp_path):
    spec = get_dataset("diamonds")
    cfg = settings(tmp_path, closed_port_url())
    path = raw_path(spec, cfg.raw_dir)
    path.parent.mkdir(parents=True)
    path.write_text(DIAMONDS_ARFF)
    raw = load_raw_table(spec, cfg)
    assert raw.origin == "user" and len(raw.frame) == 6
    record = json.loads(path.with_name(path.name + ".json").read_text())
    assert record["origin"] == "user" and record["sha256"] == raw.sha256
    assert load_raw_table(spec, cfg).origin == "user"


def test_verify_covariates_reports_mismatch(tmp_path):
    from postrisk.covariates import verify_covariates

    with FakeSources() as server:
        openml_routes(server, DIAMONDS_ARFF.encode())
        report = verify_covariates("diamonds", settings(tmp_path, server.url))
    assert not report.verified
    assert report.d == 6 and report.N == 5
    assert any("N = 5" in p for p in report.problems)
    assert report.sha256 == hashlib.sha256(DIAMONDS_ARFF.encode()).hexdigest()
