"""What ``postrisk evaluate`` reads from its command line and prints (:mod:`postrisk.cli`): a
method built with its ``--set`` settings, and the headline scores as a table."""

from __future__ import annotations

import typer


def parse_settings(values: list[str] | None) -> dict:
    """``name=value`` pairs, each value read as YAML (numbers, booleans, lists)."""
    import yaml

    out = {}
    for item in values or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--set {item!r}: expected name=value")
        out[key.strip()] = yaml.safe_load(value)
    return out


def model_from_options(method: str, settings: list[str] | None):
    """The fresh model of ``method`` (``module:Class`` or a built-in method's name) with the
    ``--set`` ``settings``; a setting that is not one of its parameters is a ValueError that
    names the option as it was given."""
    from postrisk.methods.registry import UnknownSettings, make_model

    try:
        return make_model(method, parse_settings(settings))
    except UnknownSettings as err:
        given = {item.partition("=")[0].strip(): item for item in settings or []}
        raise ValueError(", ".join(f"--set {given[key]}" for key in err.unknown)
                         + f": {err}") from err


def print_scores(scores) -> None:
    """The headline scores (the CSV holds every score), one row per task, then their mean."""
    from rich.console import Console
    from rich.table import Table

    from postrisk.evaluation.evaluate import headline_rows
    from postrisk.evaluation.scoring import HEADLINE, METRICS

    rows = headline_rows(scores)
    width = max(len(name) for name, _ in rows[:-1])  # of the task names
    table = Table(title=f"{scores['method'].iloc[0]} on {len(scores)} task(s)")
    table.add_column("task", no_wrap=True, min_width=width)
    for column in HEADLINE:
        table.add_column(METRICS[column].label, justify="right")
    for name, values in rows:
        table.add_row(name, *values)
    Console(width=max(100, width + 70)).print(table)
    notes = scores.get("undefined")
    for reason, tasks in (scores.groupby(notes)["dataset"].size().items()
                          if notes is not None else ()):
        if isinstance(reason, str) and reason:
            typer.echo(f"note: on {tasks} task(s), {reason} (column `undefined`)", err=True)
