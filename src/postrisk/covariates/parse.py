"""Parsing raw covariate files: ARFF (OpenML) and CSV with a header row (UCI)."""

from __future__ import annotations

import io

import pandas as pd


def parse_raw(kind: str, data: bytes) -> pd.DataFrame:
    """Parse a raw file: ARFF for OpenML, CSV with a header row for UCI."""
    if kind == "openml":
        return parse_arff(data.decode("utf-8"))
    if kind == "uci":
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = data.decode("latin-1")
        return pd.read_csv(io.StringIO(text))
    raise ValueError(f"no parser for source kind {kind!r}")


def _unquote(token: str) -> str:
    token = token.strip()
    if len(token) >= 2 and token[0] == token[-1] and token[0] in "'\"":
        return token[1:-1]
    return token


def _split_attribute(line: str) -> tuple[str, str]:
    rest = line.strip()[len("@attribute"):].strip()
    if rest[0] in "'\"":
        end = rest.index(rest[0], 1)
        return rest[1:end], rest[end + 1:].strip()
    name, _, kind = rest.partition(" ")
    if not kind:
        name, _, kind = rest.partition("\t")
    return name, kind.strip()


def parse_arff(text: str) -> pd.DataFrame:
    """A dense ARFF file as a data frame: numeric attributes as floats, nominal as strings."""
    names: list[str] = []
    numeric: list[bool] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        head = line.strip().lower()
        if head.startswith("@attribute"):
            name, kind = _split_attribute(line)
            names.append(name)
            numeric.append(kind.lower().split()[0] in ("numeric", "real", "integer"))
        elif head.startswith("@data"):
            body = "\n".join(x for x in lines[i + 1:]
                              if x.strip() and not x.lstrip().startswith("%"))
            break
    else:
        raise ValueError("ARFF file without an @data section")
    if not names:
        raise ValueError("ARFF file without @attribute lines")
    if body.lstrip().startswith("{"):
        raise ValueError("sparse ARFF is not supported")
    frame = pd.read_csv(io.StringIO(body), header=None, names=names, quotechar="'",
                        skipinitialspace=True, na_values=["?"], keep_default_na=False,
                        dtype=str)
    for name, is_num in zip(names, numeric, strict=True):
        col = frame[name].map(lambda v: v if pd.isna(v) else _unquote(v))
        frame[name] = pd.to_numeric(col) if is_num else col
    return frame
