"""One entry of the catalogue of artefacts (:mod:`postrisk.grid.artefacts`): what a table,
figure, page or release file is, where it lives and what builds it; and a figure's files."""

from __future__ import annotations

import importlib
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

#: The files of one figure: its PNG (the path in the catalogue) and a PDF beside it.
FIGURE_FORMATS = (".png", ".pdf")


@dataclass(frozen=True)
class Artefact:
    """One catalogue entry (see the module docstring)."""

    id: str
    path: str
    stage: str
    build: str
    kind: str = "table"  # table | figure | page | file
    title: str = ""
    caption: str = ""
    #: shown in the HTML report (and, for the tables stage, on the tables page)
    shown: bool = True
    #: what a figure draws from: table ids or CONDITION_SCORES
    reads: tuple[str, ...] = ()
    #: a table's CSV starts with the run's scale (the long table of every metric does not)
    scale_column: bool = True

    @property
    def fields(self) -> tuple[str, ...]:
        """The path's fields (``prior``, ``dataset``): the axes the entry expands over."""
        return tuple(f for _, f, _, _ in string.Formatter().parse(self.path) if f)

    @property
    def file(self) -> str:
        """The file's name (a template where the path has fields)."""
        return PurePosixPath(self.path).name

    @property
    def stem(self) -> str:
        return PurePosixPath(self.path).stem

    def path_of(self, root: str = "results", **keys: object) -> str:
        """The entry's path under ``root`` with ``keys`` filled in."""
        return f"{root}/" + self.path.format(**keys)

    def builder(self) -> Callable:
        """The function that builds the artefact (imported now)."""
        module, _, name = self.build.partition(":")
        return getattr(importlib.import_module(module), name)

    def caption_for(self, settings: Mapping[str, object]) -> str:
        """The caption with the run's settings filled in (``{correlation}``)."""
        return self.caption.format_map(dict(settings))


def figure_files(png: str) -> list[str]:
    """A figure's files: the PNG and the PDF beside it."""
    stem = png[: -len(FIGURE_FORMATS[0])]
    return [stem + suffix for suffix in FIGURE_FORMATS]

