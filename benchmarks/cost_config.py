"""Write fitted cost entries into cost_model.yaml's ``cost_model`` in place, keeping every comment
and every other line (PyYAML cannot round-trip comments; this edits the entries' lines only).

An entry is one flow mapping on one or more lines (``    nn_ens: {threads: 2, minutes: …}``).
``write_entries`` replaces an entry's ``minutes``, ``minutes_per_size`` and ``power`` (its threads,
memory and ``gpu`` values are kept; a new entry takes them from the stage's ``default``), puts one
comment above it saying where the numbers came from (replacing an earlier such comment), turns a
stage's single entry into per-name entries where a name is written (the old one becomes
``default``), and checks that the file then parses to exactly the intended ``cost_model``.
"""

from __future__ import annotations

import copy
import re
import textwrap
from pathlib import Path

import yaml

WIDTH = 100
MARK = "# measured"


def _number(value: float) -> str:
    return f"{float(f'{value:.3g}'):g}"


def _scalar(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _number(value)
    text = str(value)
    return text if re.fullmatch(r"[A-Za-z0-9_. -]+", text) and text.strip() == text else (
        '"' + text.replace('"', '\\"') + '"')


def flow(mapping: dict) -> str:
    parts = [f"{k}: {flow(v) if isinstance(v, dict) else _scalar(v)}" for k, v in mapping.items()]
    return "{" + ", ".join(parts) + "}"


def entry_lines(indent: int, name: str, mapping: dict, comment: str) -> list[str]:
    pad = " " * indent
    lines = textwrap.wrap(comment, WIDTH - indent - len(MARK) - 2, break_on_hyphens=False)
    out = [f"{pad}{MARK}: {line}" if i == 0 else f"{pad}#   {line}"
           for i, line in enumerate(lines)]
    head = f"{pad}{name}: "
    body = textwrap.wrap(flow(mapping), WIDTH - len(head), break_on_hyphens=False,
                         break_long_words=False)
    out.append(head + body[0])
    out += [" " * (len(head) + 1) + line for line in body[1:]]
    return out


def _span(lines: list[str], start: int) -> int:
    """The line after the flow mapping that starts on ``lines[start]``."""
    depth, i = 0, start
    while True:
        depth += lines[i].count("{") - lines[i].count("}")
        i += 1
        if depth <= 0:
            return i


def _block(lines: list[str], start: int, indent: int) -> int:
    """The line after the block whose key is at ``lines[start]`` (children deeper than indent)."""
    i = start + 1
    while i < len(lines):
        text = lines[i]
        if text.strip() and not text.lstrip().startswith("#") and \
                len(text) - len(text.lstrip()) <= indent:
            break
        i += 1
    while i > start + 1 and (not lines[i - 1].strip() or
                             (lines[i - 1].lstrip().startswith("#")
                              and len(lines[i - 1]) - len(lines[i - 1].lstrip()) <= indent)):
        i -= 1  # comments of the next key belong to it
    return i


def _find(lines: list[str], start: int, stop: int, indent: int, key: str) -> int | None:
    pattern = re.compile(rf"^ {{{indent}}}{re.escape(key)}:(\s|$)")
    for i in range(start, stop):
        if pattern.match(lines[i]):
            return i
    return None


def _comment_start(lines: list[str], at: int, indent: int) -> int:
    """The first line of an earlier ``# measured`` comment directly above ``at`` (else ``at``)."""
    i = at
    pad = " " * indent
    while i > 0 and lines[i - 1].startswith(pad + "#") and not lines[i - 1].startswith(
            pad + "  "):
        i -= 1
        if lines[i].startswith(pad + MARK):
            return i
    return at


def set_entry(text: str, stage: str, name: str | None, values: dict, comment: str,
              cost_model: dict) -> str:
    """``text`` with the entry ``cost_model.<stage>[.<name>]`` given ``values`` (merged over the
    current entry or the stage's default)."""
    lines = text.split("\n")
    top = _find(lines, 0, len(lines), 0, "cost_model")
    if top is None:
        raise KeyError("the file has no cost_model")
    end = _block(lines, top, 0)
    at = _find(lines, top + 1, end, 2, stage)
    if at is None:
        raise KeyError(f"cost_model has no stage {stage!r}")
    current = cost_model[stage]
    single = "threads" in current
    if name is None:
        if not single:
            raise ValueError(f"cost_model.{stage} is per name: give one")
        new = {**current, **values}
        first = _comment_start(lines, at, 2)
        lines[first:_span(lines, at)] = entry_lines(2, stage, new, comment)
        return "\n".join(lines)
    if single:  # the one entry becomes `default`, the names beside it
        stop = _span(lines, at)
        lines[at:stop] = [f"  {stage}:", *entry_lines(4, "default", current, "")]
        current = {"default": current}
    stage_end = _block(lines, at, 2)
    old = current.get(name)
    new = {**copy.deepcopy(old if old is not None else current["default"]), **values}
    where = _find(lines, at + 1, stage_end, 4, name)
    block = entry_lines(4, name, new, comment)
    if where is None:
        lines[stage_end:stage_end] = block
    else:
        lines[_comment_start(lines, where, 4):_span(lines, where)] = block
    return "\n".join(lines)


def set_scalar(text: str, key: str, value: float, comment: str, after: str) -> str:
    """``text`` with ``cost_model.<key>: value`` (inserted after ``cost_model.<after>`` when
    missing) under a comment."""
    lines = text.split("\n")
    top = _find(lines, 0, len(lines), 0, "cost_model")
    end = _block(lines, top, 0)
    at = _find(lines, top + 1, end, 2, key)
    block = entry_lines(2, key, {}, comment)[:-1] + [f"  {key}: {_number(value)}"]
    if at is None:
        where = _find(lines, top + 1, end, 2, after)
        lines[where + 1:where + 1] = block
    else:
        lines[_comment_start(lines, at, 2):at + 1] = block
    return "\n".join(lines)


def write_entries(config: Path, entries: list[dict]) -> int:
    """Write each fitted entry (``benchmarks/cost_model.py`` ``fitted_entries``) into ``config``;
    the number written."""
    text = config.read_text()
    model = yaml.safe_load(text)["cost_model"]
    expected = copy.deepcopy(model)
    written = 0
    for e in entries:
        curve = e["curve"]
        if curve is None:
            continue
        values = {"minutes": float(_number(curve["minutes"])),
                  "minutes_per_size": float(_number(curve["minutes_per_size"])),
                  "power": float(_number(curve["power"]))}
        rows = ", ".join(f"{r:,}" for r in e["rows"])
        comment = (f"{e['date']}, {e['machine']} (benchmarks/cost_model.py): {rows} rows; "
                   f"{e['how']}" + (f"; {e['anchored']}" if e["anchored"] else ""))
        name = e["name"] or None
        stage = model.get(e["stage"], {})
        current = stage if "threads" in stage else (stage.get(name) or stage.get("default", {}))
        if "mem_mb_per_size" in current and "mem_power" not in current:
            # the memory model is not measured: it keeps the power it had
            values["mem_power"] = float(current.get("power", 1.0))
        if e["stage"] == "job":  # the start every job pays: one number
            text = set_scalar(text, "job_minutes", values["minutes"], comment, "min_runtime")
            expected["job_minutes"] = values["minutes"]
            model = yaml.safe_load(text)["cost_model"]
            written += 1
            continue
        text = set_entry(text, e["stage"], name, values, comment, model)
        model = yaml.safe_load(text)["cost_model"]
        if name is None:
            expected[e["stage"]] = {**expected[e["stage"]], **values}
        else:
            if "threads" in expected[e["stage"]]:
                expected[e["stage"]] = {"default": expected[e["stage"]]}
            base = expected[e["stage"]].get(name) or expected[e["stage"]]["default"]
            expected[e["stage"]][name] = {**base, **values}
        written += 1
    if model != expected:
        raise AssertionError("the edited cost_model does not parse to the intended entries")
    config.write_text(text)
    return written
