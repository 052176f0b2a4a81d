"""GPU check: one Concrete instance's HBART and BNN reference posteriors at the paper's
settings, timed on a GPU machine against this machine's CPUs.

    .venv/bin/python benchmarks/gpu_check.py bundle [--out gpu_bundle] [--no-wheels]
        [--cpu-times runs/paper_slice/results|TABLE.csv] [--config LAYER.yaml ...]   # here
    python3 benchmarks/gpu_check.py run [--bundle gpu_bundle] [--allow-cpu] [--quick]
        [--budget-s 300] [--priors bnn,hbart]                    # there, from the repo root

``bundle`` writes the folder that travels (git-excluded): the sample stores of concrete/{hbart,
bnn}/smooth_monotone/balanced/0 built by the workflow's steps from config.yaml (offline
Concrete), manifest.json (posterior settings; seconds per posterior job here, from a finished
run's Snakemake benchmark files) and wheels (cp312 manylinux, uv.lock's versions) of what
make_task imports that the GPU machine lacks; at most 64 MiB with the working tree. ``run``
installs them into gpu_bundle/site unless importable, exits 1 when JAX sees no GPU (unless
--allow-cpu), prints the versions, runs each make_task in its own process (x64 off for HBART,
on for BNN) within the budget and prints seconds there and here; exit 0 when both ran. Results:
$OUT/gpu_check.json (else the bundle's), logs beside it. --quick: tiny settings, no timing.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import importlib.metadata as md
import json
import logging
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
sys.path.insert(0, str(SRC))

MIB = 1024 * 1024
LIMIT_BYTES = 64 * MIB  # what the device tool carries: working tree and carried folders together
INSTANCE = ("concrete", "smooth_monotone", "balanced", 0)  # dataset, noise, coverage, seed
PRIORS = ("hbart", "bnn")
#: What make_task imports for an HBART and a BNN instance, its lazy imports included.
MODULES = """postrisk.workflow.steps postrisk.tasks.generate postrisk.tasks.diagnostics
postrisk.priors.hbart.prior postrisk.priors.bnn.prior bartz.mcmcstep bartz.mcmcloop
bartz.prepcovars numpyro.infer.hmc arviz zarr.codecs postrisk.core.logs""".split()
#: On the GPU machine and never carried: a wheel of these would shadow the device's build.
NEVER_CARRY = frozenset("jax jaxlib numpy numpyro xarray scipy pandas postrisk".split())
#: The GPU machine's image (nvidia-h200, 'cuda', as read 2026-11-17: Python 3.12.3, JAX 0.11.2
#: with the CUDA 13 plugin, numpyro 0.21.0, numpy 2.5.2): those of its packages that uv.lock
#: also holds, the only ones that can be imported here.
DEVICE_PACKAGES = frozenset("""
absl-py aiofiles annotated-doc attrs certifi charset-normalizer click cloudpickle colorama
contourpy cycler equinox etils execnet filelock flax fonttools formulaic fsspec h11 h5py humanize
idna iniconfig interface-meta jax jaxlib jaxtyping jinja2 joblib kiwisolver markdown-it-py
markupsafe matplotlib mdurl ml-dtypes mpmath msgpack multipledispatch narwhals numpy numpyro
opt-einsum optax orbax-checkpoint packaging pandas pillow pluggy prometheus-client protobuf psutil
pygments pyparsing pytest pytest-xdist python-dateutil pyyaml requests rich scikit-learn scipy
setuptools shellingham simplejson six sortedcontainers sympy tabulate tensorstore threadpoolctl
tqdm treescope typer typing-extensions urllib3 uvloop wadler-lindig wrapt xarray zipp""".split())
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
#: --quick: tiny posteriors (HBART: the 40 draws the checks need at least).
QUICK = {"hbart": {"chains": 4, "warmup": 20, "draws_per_chain": 10, "thin": 1,
                   "tempering": {"t0": 3.0, "stages": 2, "share": 0.5}},
         "bnn": {"chains": 2, "warmup": 30, "samples": 30, "max_tree_depth": 6}}
VERSIONS = ("jax", "jaxlib", "bartz", "numpyro", "zarr", "arviz", "numpy")


def canonical(name: str) -> str:
    """A distribution's name as PEP 503 normalises it (and the device list spells it)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def version(name: str) -> str | None:
    return next((d.version for d in md.distributions(name=name)), None)


def imported_distributions() -> list[str]:
    """The distributions whose top-level modules this process has imported."""
    found = md.packages_distributions()
    tops = {name.partition(".")[0] for name in list(sys.modules)}
    return sorted({canonical(d) for top in tops for d in found.get(top, ())})


def check_size(bundle_bytes: int, tree_bytes: int = 0, limit: int = LIMIT_BYTES) -> None:
    """Stop (exit 1, one message) when the bundle and the working tree exceed ``limit``."""
    if bundle_bytes + tree_bytes > limit:
        raise SystemExit(
            f"the bundle is {bundle_bytes / MIB:.1f} MiB; with the working tree's "
            f"{tree_bytes / MIB:.1f} MiB that is over the {limit / MIB:.0f} MiB the device tool "
            "carries: drop wheels the device already has, or build with --no-wheels")


def git_tree(out: Path) -> int:
    """Add ``out`` to .git/info/exclude when it lies in the checkout (never .gitignore); the
    bytes of the working tree the device tool sends (tracked and untracked, not ignored)."""
    def git(*args):  # "" when git fails
        return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True).stdout

    where = git("rev-parse", "--git-path", "info/exclude").strip()
    if out.is_relative_to(REPO) and where:
        exclude, line = REPO / where, f"/{out.relative_to(REPO).as_posix()}/"
        text = exclude.read_text() if exclude.is_file() else ""
        if line not in text.splitlines():
            exclude.parent.mkdir(parents=True, exist_ok=True)
            exclude.write_text(text + ("\n" if text[-1:] not in ("", "\n") else "") + line + "\n")
    files = git("ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    return sum((REPO / f).stat().st_size for f in files if f and (REPO / f).is_file())


def build_stores(layers: list[str], out: Path) -> tuple[dict, dict]:
    """The merged config (config.yaml, offline Concrete, ``layers``) and each instance's manifest
    entry, its sample store built anew by the workflow's steps under ``out/results``."""
    from postrisk.grid.config import merge_layers, read_layers, validate_config
    from postrisk.grid.paths import path
    from postrisk.planning.conditions import training_size
    from postrisk.planning.cost import CostModel
    from postrisk.tasks.key import TaskKey, config_digest
    from postrisk.workflow.steps import fit_prior, make_covariates, make_sample

    read = [*read_layers(REPO / "config.yaml"), {"covariates": {"prefer_offline_package": True}},
            *read_layers(*layers, cost_model=False)]
    cfg = validate_config(merge_layers(read), read)
    dataset, noise, coverage, seed = INSTANCE
    results, instances = out / "results", {}
    shutil.rmtree(results, ignore_errors=True)
    covariates = path("covariates", str(results), dataset=dataset)
    make_covariates(dataset, cfg["covariates"], int(cfg["sizes"]["n_eval_cap"]), covariates)
    for prior in PRIORS:
        key = TaskKey(dataset, prior, noise, coverage, seed)
        prior_file = path("prior", str(results), dataset=dataset, prior=prior)
        sample = path("sample", str(results), **key.as_dict())
        fit_prior(dataset, prior, covariates, cfg[f"{prior}_prior"], prior_file)
        make_sample(key, covariates, prior_file, training_size(dataset, cfg["sizes"].get("n_cap")),
                    config_digest(cfg, prior), sample, float(cfg["noise_model"]["strength"]))
        instances[prior] = {"key": key.label, "sample": str(Path(sample).relative_to(out)),
                            "settings": cfg["posterior"][prior],
                            "threads": int(CostModel.of(cfg).entry("posterior", prior,
                                                      gpu=True)["threads"])}
    return cfg, instances


def cpu_reference(results: Path | None, cfg: dict, instances: dict, out: Path) -> dict:
    """This machine's seconds per posterior job: column ``s`` of the Snakemake benchmark file of
    each instance's job in a finished run's ``results`` (its sample: the bundle's settings?)."""
    from postrisk.core.io import open_zarr
    from postrisk.grid.paths import RESULTS, benchmark_path, path
    from postrisk.tasks.key import TaskKey

    ref: dict = {"results": str(results) if results else None, "cpu_count": os.cpu_count(),
                 "machine": f"{platform.machine()} {platform.processor()}".strip()}
    if results is not None and results.is_file():
        return ref | measured_reference(results, instances)
    for prior, entry in instances.items():
        key = TaskKey.parse(entry["key"]).as_dict()
        ref[prior] = got = {"seconds": None, "note": "unknown: no --cpu-times folder given"}
        if results is None:
            continue
        job = benchmark_path("posterior", tuple(cfg["group_by"]["posterior"])).format(**key)
        tsv, task = (results / f[len(RESULTS) + 1:] for f in (job, path("task", **key)))
        got["note"] = f"unknown: no {tsv}"
        if tsv.is_file():
            with tsv.open() as fh:
                got.update(seconds=float(next(csv.DictReader(fh, delimiter="\t"))["s"]),
                           note=f"from {tsv}")
        if task.is_dir():  # its sample store had the bundle's settings
            got["same_sample"] = (open_zarr(task, load=False).attrs["sample_config_digest"]
                                  == open_zarr(out / entry["sample"]).attrs["config_digest"])
    return ref


def measured_reference(table: Path, instances: dict) -> dict:
    """This machine's seconds per posterior job from a measured job-times table (the
    ``benchmarks/measured/paper_slice.csv`` that ``job_times.py`` keeps): its row of each
    instance's posterior job, with the machine and date it was measured on."""
    with table.open() as fh:
        rows = {(r["stage"], r["job"]): r for r in csv.DictReader(fh)}
    ref: dict = {}
    for prior, entry in instances.items():
        row = rows.get(("posterior", entry["key"]))
        ref[prior] = ({"seconds": float(row["seconds"]), "same_sample": None,
                       "note": f"from {table.name} ({row['machine']}, {row['date']})"}
                      if row else {"seconds": None, "note": f"unknown: no row in {table}"})
    return ref


def download_wheels(names: list[str], wheels: Path) -> list[dict]:
    """CPython 3.12 manylinux x86_64 wheels of ``names`` at uv.lock's versions (no deps), with
    a pip that works: this interpreter's, the project's tools' or python3's."""
    lock = tomllib.loads((REPO / "uv.lock").read_text())
    versions = {canonical(p["name"]): p["version"] for p in lock["package"] if "version" in p}
    if unlocked := [n for n in names if n not in versions]:
        raise SystemExit(f"not in uv.lock, so no version to pin: {', '.join(unlocked)}")
    pip = next((p for p in (sys.executable, REPO / ".tools/bin/python", shutil.which("python3"))
                if p and subprocess.run([str(p), "-m", "pip", "--version"],
                                        capture_output=True).returncode == 0), None)
    if pip is None:
        raise SystemExit("no pip found (tried this Python, .tools/bin/python and python3)")
    wheels.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(pip), "-m", "pip", "download", "-q", "--only-binary=:all:", "--no-deps",
                    "--python-version", "3.12", "--implementation", "cp", "-d", str(wheels),
                    *[arg for p in PLATFORMS for arg in ("--platform", p)],
                    *[f"{n}=={versions[n]}" for n in names]], check=True)
    files = {(canonical(w.name.split("-")[0]), w.name.split("-")[1]): w
             for w in wheels.glob("*.whl")}
    return [{"name": n, "version": versions[n], "file": files[n, versions[n]].name,
             "bytes": files[n, versions[n]].stat().st_size} for n in names]


def bundle(args: argparse.Namespace) -> None:
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    tree = git_tree(out)
    cfg, instances = build_stores(args.config, out)
    proc = subprocess.run([sys.executable, __file__, "_imports"], check=True, text=True,
                          capture_output=True, env=dict(os.environ, JAX_PLATFORMS="cpu"))
    needed = [d for d in json.loads(proc.stdout.strip().splitlines()[-1])
              if d not in DEVICE_PACKAGES and d not in NEVER_CARRY]
    shutil.rmtree(out / "wheels", ignore_errors=True)
    wheels = [] if args.no_wheels else download_wheels(needed, out / "wheels")
    cpu = cpu_reference(Path(args.cpu_times).resolve() if args.cpu_times else None, cfg,
                        instances, out)
    manifest = {"created": datetime.now(UTC).isoformat(timespec="seconds"),
                "config_layers": ["config.yaml", "offline Concrete", *args.config],
                "instances": instances, "cpu_reference": cpu, "needed": needed, "wheels": wheels}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print("".join(f"  {w['file']:72s} {w['bytes'] / MIB:6.2f} MiB\n" for w in wheels) + "".join(
        f"  {instances[p]['key']}: CPU reference {cpu[p]['seconds']} s ({cpu[p]['note']})\n"
        for p in PRIORS), end="")
    print(f"bundle {out}: {size / MIB:.1f} MiB ({len(wheels)} wheels; the working tree "
          f"{tree / MIB:.1f} MiB; limit {LIMIT_BYTES / MIB:.0f} MiB together)")
    check_size(size, tree)


def prepare_site(bundle_dir: Path, manifest: dict) -> list[str]:
    """Put ``bundle/site`` first on sys.path and install there the bundled wheels whose
    distributions are not importable (never a NEVER_CARRY one); stop if one still is not."""
    site = bundle_dir / "site"
    sys.path.insert(0, str(site))
    if install := [w for w in manifest["wheels"] if version(w["name"]) is None]:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                        "--find-links", str(bundle_dir / "wheels"), "--target", str(site),
                        *[f"{w['name']}=={w['version']}" for w in install]], check=True)
        importlib.invalidate_caches()
    if shadow := [n for n in NEVER_CARRY if (site / n).exists()]:
        raise SystemExit(f"{site} holds {shadow}: it would shadow the machine's own; remove it")
    if missing := [n for n in manifest["needed"] if version(n) is None]:
        raise SystemExit(f"not importable and not in the bundle's wheels: {', '.join(missing)} "
                         "(build the bundle without --no-wheels)")
    return [w["name"] for w in install]


def child(args: argparse.Namespace) -> None:
    """One instance's make_task in this process, JAX set up as the posterior rules do."""
    from postrisk.core.jax_env import share_accelerator_memory, use_host_devices

    use_host_devices(int(args.threads))  # before anything imports jax
    share_accelerator_memory()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    from postrisk.core.io import open_zarr
    from postrisk.core.jax_env import check_accelerator
    from postrisk.tasks.validity import RHAT_THRESHOLD
    from postrisk.workflow.steps import make_task

    record = check_accelerator(True, allow_cpu_fallback=True)  # the parent decided already
    start = time.perf_counter()
    make_task(args.sample, json.loads(args.settings), args.out, record)
    make_task_s = time.perf_counter() - start
    ds = open_zarr(args.out)
    sampler = json.loads(ds.attrs["sampler_settings"])
    compile_s = sampler.get("seconds_compile")  # BNN: measured
    if "stages" in sampler:  # HBART: each stage's seconds beyond its iterations at the median
        # rate of the tempered stages after the first (they reuse its compiled loop)
        stages = sampler["stages"]
        rates = sorted(s["seconds"] / s["iterations"] for s in stages[1:]
                       if s["kind"] == "tempered") or [None]
        rate = rates[len(rates) // 2]
        compile_s = None if rate is None else sum(max(0.0, s["seconds"] - s["iterations"] * rate)
                                                  for s in stages)
    max_rhat = float(ds["rhat"].max()) if "rhat" in ds else None
    Path(args.result).write_text(json.dumps({
        "make_task_s": make_task_s, "compile_s": compile_s, "max_rhat": max_rhat,
        "valid": None if max_rhat is None else max_rhat <= RHAT_THRESHOLD,
        "sampler": {k: sampler.get(k) for k in ("backend", "device_kind", "devices_used",
                                                "devices", "rounds")},
        "imported_distributions": imported_distributions()}))


def timed(prior: str, manifest: dict, args: argparse.Namespace, bundle_dir: Path, work: Path,
          out_dir: Path, remaining: float) -> dict:
    """``prior``'s instance in a child process, killed after ``remaining`` seconds."""
    entry, log = manifest["instances"][prior], out_dir / f"gpu_check_{prior}.log"
    settings = {**entry["settings"], **(QUICK[prior] if args.quick else {})}
    ref = manifest["cpu_reference"].get(prior, {}).get("seconds")
    row = {"key": entry["key"], "settings": settings, "log": str(log), "reference_cpu_s": ref,
           "ratio": None, "status": "not started: the budget is spent"}
    print(f"{entry['key']}: {'quick' if args.quick else 'paper'} settings", flush=True)
    if remaining < 5:
        return row
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=os.pathsep.join(
        [str(bundle_dir / "site"), str(SRC), *filter(None, [os.environ.get("PYTHONPATH")])]))
    result, start = work / f"{prior}.json", time.perf_counter()
    cmd = [sys.executable, __file__, "_child", "--sample", str(bundle_dir / entry["sample"]),
           "--settings", json.dumps(settings), "--out", str(work / f"{prior}.zarr"),
           "--threads", str(min(entry["threads"], os.cpu_count() or 1)), "--result", str(result)]
    with log.open("w") as fh:
        try:
            code = subprocess.run(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                  timeout=remaining).returncode
            row["status"] = "ok" if code == 0 and result.is_file() else (
                f"failed (exit code {code}): see {log}")
        except subprocess.TimeoutExpired:
            row["status"] = f"over budget: killed after {remaining:.0f} s (--budget-s)"
    row["seconds"] = time.perf_counter() - start
    if row["status"] == "ok":
        row.update(json.loads(result.read_text()))
        row["ratio"] = ref / row["seconds"] if ref and not args.quick else None
    print("".join(f"  | {line}\n" for line in log.read_text().splitlines()[-6:]), end="")
    print(f"{entry['key']}: {row['status']}, {row['seconds']:.1f} s"
          + (f", max R-hat {row['max_rhat']:.3f}" if row.get("max_rhat") else ""), flush=True)
    return row


def table(rows: list[dict], backend: str) -> str:
    def cell(value, fmt="{:9.1f}", missing="-"):
        return fmt.format(value) if value is not None else f"{missing:>9s}"

    return "\n".join([f"{'instance':42s} {'backend':7s} {'s here':>9s} {'compile':>9s} "
                      f"{'s CPU ref':>9s} {'CPU/here':>9s}"] + [
        f"{r['key']:42s} {backend:7s} {cell(r.get('seconds'))} {cell(r.get('compile_s'))} "
        f"{cell(r['reference_cpu_s'], missing='unknown')} {cell(r['ratio'], '{:8.1f}x')}"
        + ("" if r["status"] == "ok" else f"  {r['status']}") for r in rows])


def run(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    bundle_dir = Path(args.bundle).resolve()
    if not (bundle_dir / "manifest.json").is_file():
        raise SystemExit(f"no bundle at {bundle_dir}: build it with `bundle` here, carry it there")
    manifest = json.loads((bundle_dir / "manifest.json").read_text())
    out_dir = Path(os.environ.get("OUT") or bundle_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    report: dict = {"quick": args.quick, "budget_s": args.budget_s, "allow_cpu": args.allow_cpu,
                    "python": platform.python_version(),
                    "installed_from_bundle": prepare_site(bundle_dir, manifest)}
    from postrisk.core.jax_env import share_accelerator_memory

    share_accelerator_memory()
    import jax

    devices, backend = jax.devices(), jax.default_backend()
    report.update(backend=backend, device_kind=devices[0].device_kind, device_count=len(devices),
                  versions={n: version(n) for n in VERSIONS})
    print(f"Python {report['python']}; " + ", ".join(f"{n} {v}" for n, v in
                                                     report["versions"].items())
          + f"\nbackend: {backend} ({len(devices)} x {devices[0].device_kind})")
    rows: list[dict] = []
    if (gpu := backend in ("gpu", "cuda", "rocm")) or args.allow_cpu:
        if not gpu:
            print("running on the CPU (--allow-cpu): these are not GPU timings")
        with tempfile.TemporaryDirectory(prefix="gpu_check_") as work:
            for prior in args.priors.split(","):
                rows.append(timed(prior, manifest, args, bundle_dir, Path(work), out_dir,
                                  args.budget_s - (time.perf_counter() - start)))
        seen = sorted({d for r in rows for d in r.pop("imported_distributions", [])})
        report.update(instances={r["key"].split("/")[1]: r for r in rows},
                      imported_distributions=seen,
                      imported_not_listed=[d for d in seen if d not in DEVICE_PACKAGES
                                           and d not in NEVER_CARRY | set(manifest["needed"])])
        print(table(rows, backend))
    else:
        report["error"] = (f"no GPU: JAX sees backend {backend!r} ({devices[0].device_kind}; "
                           f"CUDA_VISIBLE_DEVICES {os.environ.get('CUDA_VISIBLE_DEVICES')}, "
                           f"JAX_PLATFORMS {os.environ.get('JAX_PLATFORMS')}); run this on the "
                           "GPU machine, or pass --allow-cpu to run on the CPU")
        print(report["error"], file=sys.stderr)
    report["total_s"] = time.perf_counter() - start
    (out_dir / "gpu_check.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out_dir / 'gpu_check.json'} ({report['total_s']:.0f} s of the "
          f"{args.budget_s:.0f} s budget)")
    return 0 if rows and all(r["status"] == "ok" for r in rows) else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bundle", help="build the folder that travels to the GPU machine")
    b.add_argument("--out", default=str(REPO / "gpu_bundle"))
    b.add_argument("--cpu-times", help="a finished run's results folder (its benchmark files) "
                   "or a measured job-times table (benchmarks/measured/paper_slice.csv)")
    b.add_argument("--config", action="append", default=[],
                   help="a config layer merged over config.yaml (repeatable; tests)")
    b.add_argument("--no-wheels", action="store_true", help="download no wheels")
    r = sub.add_parser("run", help="on the GPU machine: run and time both instances")
    r.add_argument("--bundle", default=str(REPO / "gpu_bundle"))
    r.add_argument("--allow-cpu", action="store_true", help="run on the CPU when no GPU")
    r.add_argument("--quick", action="store_true", help="tiny posterior settings")
    r.add_argument("--budget-s", type=float, default=300.0, help="the whole run's limit")
    r.add_argument("--priors", default="bnn,hbart",
                   help="which instances, in this order (the shorter first)")
    c = sub.add_parser("_child")
    for name in ("--sample", "--settings", "--out", "--result", "--threads"):
        c.add_argument(name, required=True)
    sub.add_parser("_imports")
    args = parser.parse_args()
    if args.command == "_imports":  # the import closure of make_task, for bundle
        for module in MODULES:
            importlib.import_module(module)
        print(json.dumps(imported_distributions()))
    else:
        sys.exit({"bundle": bundle, "run": run, "_child": child}[args.command](args))


if __name__ == "__main__":
    main()
