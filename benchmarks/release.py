"""Release sizes and download throughput, measured on a run's own task stores.

    .venv/bin/python benchmarks/release.py --results results     # e.g. after `make demo`

1. Packs the run's valid instances (rule `release`'s code) into a temporary folder and prints the
   packed size per (dataset, prior) file and per instance.
2. Projects the paper-scale suite (13 datasets × 3 priors × 4 noise modes × 2 coverages × 10
   seeds, D = 1,000 draws, Table 4's n and n_eval) from two measured rates: the packed bytes per
   posterior-draw value (per prior) and the packed bytes per data row of everything else
   in an instance; the per-dataset files from the measured bytes per covariate-store cell. It
   prints the projection against the 50 GB limit, and what the draws at the training inputs
   (not released) would add.
3. Serves the packed folder on 127.0.0.1 (Python's static file server), downloads it with
   `postrisk download`'s code (every sha256 verified) and prints the throughput against a
   baseline measured in the same run: copying the same files and hashing the copies.
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import tempfile
import threading
import time
import zipfile
from collections import defaultdict
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from postrisk.core.download import file_sha256
from postrisk.covariates.registry import registry, task_datasets
from postrisk.release.download import download_release
from postrisk.release.pack import DEFAULT_MAX_BYTES
from postrisk.workflow.steps import pack_release

DRAWS = 1000
INSTANCES_PER_DATASET_PRIOR = 4 * 2 * 10
PRIORS = ("gp", "hbart", "bnn")


def _instance_parts(zip_path: Path, group: str) -> tuple[int, int]:
    """Packed bytes of an instance's posterior draws and of everything else."""
    draws = other = 0
    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            if info.filename.startswith(group + "/"):
                if info.filename.startswith(f"{group}/posterior_draws/"):
                    draws += info.file_size
                else:
                    other += info.file_size
    return draws, other


def _mb(n: float) -> str:
    return f"{n / 1e6:,.2f} MB"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default="results", type=Path)
    args = parser.parse_args()
    results = args.results
    work = Path(tempfile.mkdtemp(prefix="postrisk-release-bench-"))
    try:
        out = work / "release"
        t0 = time.perf_counter()
        manifest = pack_release(results / "checks/instances.csv",
                                [Path("DATA_CARD.md"), Path("CITATION.cff")], out,
                                {"max_bytes": DEFAULT_MAX_BYTES, "max_files": 100},
                                "measured", "benchmark", results=results)
        pack_s = time.perf_counter() - t0
        print(f"packed {len(manifest['instances'])} instances into {len(manifest['files'])} "
              f"files, {_mb(manifest['total_bytes'])}, in {pack_s:.1f} s "
              f"({len(manifest['not_shipped'])} not shipped)")
        print(f"{'file':28s} {'instances':>9s} {'bytes':>14s} {'per instance':>14s}")
        for f in manifest["files"]:
            n = f.get("instances")
            per = _mb(f["bytes"] / n) if n else ""
            print(f"{f['name']:28s} {n or '':>9} {f['bytes']:>14,} {per:>14s}")

        # rates: bytes per posterior-draw value (per prior), bytes per data row otherwise
        draw_bytes, draw_values = defaultdict(int), defaultdict(int)
        row_bytes = rows = 0
        for inst in manifest["instances"]:
            attrs = json.loads(zipfile.ZipFile(out / inst["file"])
                               .read(f"{inst['group']}/zarr.json"))["attributes"]
            draws, other = _instance_parts(out / inst["file"], inst["group"])
            n_draws = _draw_count(out / inst["file"], inst["group"])
            draw_bytes[inst["prior"]] += draws
            draw_values[inst["prior"]] += n_draws * int(attrs["n_eval"])
            row_bytes += other
            rows += int(attrs["n"]) + int(attrs["n_eval"])
        per_value = {p: draw_bytes[p] / draw_values[p] for p in draw_bytes}
        mean_value = sum(draw_bytes.values()) / sum(draw_values.values())
        per_row = row_bytes / rows
        print("packed bytes per posterior-draw value: " +
              ", ".join(f"{p} {v:.3f}" for p, v in per_value.items()) +
              f" (float32: 4); per data row otherwise: {per_row:.1f}")

        cov_bytes = cov_cells = 0
        for f in manifest["files"]:
            if f["kind"] == "dataset":
                spec = registry()[f["dataset"]]
                cov_bytes += f["bytes"]
                cov_cells += spec.N * (spec.d + 1)
        per_cell = cov_bytes / cov_cells

        total = train_draws = 0
        for name in task_datasets():
            spec = registry()[name]
            for prior in PRIORS:
                value = per_value.get(prior, mean_value)
                total += INSTANCES_PER_DATASET_PRIOR * (value * DRAWS * spec.n_eval
                                                        + per_row * (spec.n + spec.n_eval))
                train_draws += INSTANCES_PER_DATASET_PRIOR * value * DRAWS * spec.n
            total += per_cell * spec.N * (spec.d + 1)
        n_instances = len(task_datasets()) * len(PRIORS) * INSTANCES_PER_DATASET_PRIOR
        print(f"projected paper-scale release: {n_instances:,} instances, "
              f"{total / 1e9:.1f} GB = {total / DEFAULT_MAX_BYTES:.2f} of the 50 GB limit "
              f"(priors without a measured rate use the mean rate)")
        print(f"the draws at the training inputs (not released) would add "
              f"{train_draws / 1e9:.1f} GB ({train_draws / (total + train_draws):.0%} of the "
              f"total with them)")

        # throughput: download and verify over loopback vs copy and hash on disk
        server = ThreadingHTTPServer(("127.0.0.1", 0),
                                     functools.partial(_Quiet, directory=str(out)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            report = download_release(f"http://127.0.0.1:{server.server_address[1]}",
                                      work / "download")
        finally:
            server.shutdown()
            server.server_close()
        t0 = time.perf_counter()
        (work / "copy").mkdir()
        for f in manifest["files"]:
            target = work / "copy" / f["name"]
            shutil.copyfile(out / f["name"], target)
            assert file_sha256(target) == f["sha256"]
        copy_s = time.perf_counter() - t0
        copy_rate = manifest["total_bytes"] / 1e6 / copy_s
        print(f"download + verify over loopback: {_mb(report.bytes_downloaded)} in "
              f"{report.seconds:.2f} s = {report.throughput_mb_s:.0f} MB/s; copy + hash on disk: "
              f"{copy_rate:.0f} MB/s; ratio {report.throughput_mb_s / copy_rate:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _draw_count(zip_path: Path, group: str) -> int:
    meta = json.loads(zipfile.ZipFile(zip_path).read(f"{group}/posterior_draws/zarr.json"))
    return int(meta["shape"][0])


if __name__ == "__main__":
    main()
