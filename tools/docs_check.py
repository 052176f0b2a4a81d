"""The documentation's checks, run by `make lint` (`python tools/docs_check.py`):

- **links**: every relative link of the README and of every file under ``docs/`` names a file
  or folder that exists, and a ``#anchor`` into a Markdown file names one of its headings (as
  GitHub makes anchors of headings); web addresses are not fetched;
- **section references**: every ``<file>.md, "<Heading>"`` written in the code, the rules, the
  tests, the configuration or the docs names a heading of that file (a heading may go on
  after the reference with a parenthesis or a colon: ``"Is OOD detection a proxy for EU?"``);
- **command blocks**: every ``bash`` block of the documents the slow tier runs
  (:data:`RUNNABLE_DOCS`, tests/workflow/test_documented_commands.py) is either run there or
  marked as needing a cluster or a network (``<!-- needs: cluster -->``,
  ``<!-- needs: network … -->``), or is one of the snippets the release round trip runs, or
  one of the two commands CI runs;
- **tests where a newcomer looks**: every library module with logic has
  ``tests/<package>/test_<module>.py``, or the contributor guide's table of theme tests lists it
  with a test file that exists and imports it (or runs the workflow, which calls it).

No link checker we know of checks GitHub's heading anchors in Markdown offline, or references
to a section written as text in code comments; markdown-it-py (rich's parser, already
installed) reads the Markdown. Each problem is one line; the exit status is 1 on any.
"""

from __future__ import annotations

import ast
import re
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

from markdown_it import MarkdownIt

REPO = Path(__file__).resolve().parents[1]
#: The documents whose command blocks the slow tier runs, in this order, in one fresh copy of
#: the checkout after `make demo` (tests/workflow/test_documented_commands.py).
RUNNABLE_DOCS = ("README.md", "docs/guide.md")
#: The markers that exempt a block of a runnable document: the words after ``needs:``.
EXEMPTING_NEEDS = ("cluster", "network")
#: Snippet markers whose blocks run elsewhere (tests/workflow/test_workflow.py,
#: test_release_round_trip, against a release served on loopback).
SNIPPETS = ("release-snippet", "evaluate-snippet")
#: Where section references are looked for.
REFERENCE_ROOTS = ("README.md", "Makefile", "Snakefile", "config.yaml", "cost_model.yaml",
                   "docs", "src", "rules", "scripts", "tests", "benchmarks", "presets",
                   "profiles", "workflow", "examples", "tools")
#: The contributor guide, whose table lists the modules tested by a theme test.
CONTRIBUTING = "docs/contributing.md"

_MD = MarkdownIt("commonmark").enable("table")
_BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)
_COMMENT = re.compile(r"<!--\s*(.*?)\s*-->")
_REFERENCE = re.compile(r"(?:docs/)?\b([A-Za-z_]+)\.md, \"([^\"<>]+)\"")


# ---------------------------------------------------------------- Markdown: headings and links
def slug(text: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation other than ``-`` and ``_``
    dropped (letters and digits of any script kept), each space a ``-``."""
    kept = []
    for char in text.strip().lower():
        category = unicodedata.category(char)
        if char in "-_" or category[0] in "LN" or category == "Mn":
            kept.append(char)
        elif char == " ":
            kept.append("-")
    return "".join(kept)


def _inline_text(token) -> str:
    return "".join(child.content for child in token.children or ()
                   if child.type in ("text", "code_inline"))


def headings(text: str) -> list[str]:
    """The headings' texts, in order (inline code and link texts kept, markup dropped)."""
    tokens = _MD.parse(text)
    return [_inline_text(tokens[i + 1]) for i, tok in enumerate(tokens)
            if tok.type == "heading_open"]


def anchors(text: str) -> set[str]:
    """Every heading's anchor; a repeated one also gets GitHub's ``-1``, ``-2``… forms."""
    seen: dict[str, int] = {}
    result = set()
    for heading in headings(text):
        base = slug(heading)
        count = seen.get(base, 0)
        result.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return result


def links(text: str) -> Iterator[str]:
    """Every link target (inline links and images; not inside code)."""
    for token in _MD.parse(text):
        for child in token.children or ():
            if child.type == "link_open":
                yield child.attrs.get("href", "")
            elif child.type == "image":
                yield child.attrs.get("src", "")


def markdown_files(root: Path = REPO) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def link_problems(root: Path = REPO) -> list[str]:
    problems = []
    for doc in markdown_files(root):
        for target in links(doc.read_text()):
            if re.match(r"[a-z]+:", target) or not target:  # https:, mailto:
                continue
            name, _, anchor = target.partition("#")
            anchor = unquote(anchor)
            dest = (doc.parent / name).resolve() if name else doc
            where = f"{doc.relative_to(root)}: link {target}"
            if not dest.exists():
                problems.append(f"{where}: {name} does not exist")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text()):
                problems.append(f"{where}: {dest.name} has no heading with anchor #{anchor}")
    return problems


# ---------------------------------------------------------------- section references in text
def _reference_files(root: Path) -> Iterator[Path]:
    for name in REFERENCE_ROOTS:
        path = root / name
        if path.is_file():
            yield path
        elif path.is_dir():
            yield from (p for p in sorted(path.rglob("*"))
                        if p.is_file() and p.suffix in (".py", ".md", ".smk", ".yaml", ".cff",
                                                        "") and "__pycache__" not in p.parts)


def _doc_path(root: Path, name: str) -> Path:
    return root / "README.md" if name == "README" else root / "docs" / f"{name}.md"


def reference_problems(root: Path = REPO) -> list[str]:
    problems, cache = [], {}
    for path in _reference_files(root):
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        # references wrap lines, in comments too: join the lines without their comment marks
        joined = " ".join(re.sub(r"\n[ \t]*#+[ \t]?", " ", text).split())
        for match in _REFERENCE.finditer(joined):
            name, heading = match.groups()
            doc = _doc_path(root, name)
            where = f"{path.relative_to(root)}: {name}.md, \"{heading}\""
            if not doc.exists():
                problems.append(f"{where}: there is no {doc.relative_to(root)}")
                continue
            if doc not in cache:
                cache[doc] = headings(doc.read_text())
            if not any(h == heading or h.startswith((heading + " (", heading + ": "))
                       for h in cache[doc]):
                problems.append(f"{where}: {doc.relative_to(root)} has no such heading")
    return problems


# ---------------------------------------------------------------- command blocks
def command_blocks(text: str) -> list[tuple[str, list[str]]]:
    """Every ```bash block of ``text`` with the HTML comments on the lines just before it
    (blank lines between them allowed)."""
    blocks = []
    for match in _BLOCK.finditer(text):
        before = text[:match.start()].rstrip("\n").splitlines()
        markers = []
        while before and (_COMMENT.fullmatch(before[-1].strip()) or not before[-1].strip()):
            line = before.pop().strip()
            if line:
                markers.append(_COMMENT.fullmatch(line).group(1))
        blocks.append((match.group(1), markers))
    return blocks


def exemption(block: str, markers: list[str]) -> str | None:
    """Why a block is not run by the slow tier's test of the documents, or None where it is."""
    for marker in markers:
        if marker in SNIPPETS:
            return f"{marker}: run by test_release_round_trip"
        if marker.startswith("needs:"):
            needs = re.split(r"[\s,(]+", marker.removeprefix("needs:").strip())
            if needs and needs[0] in EXEMPTING_NEEDS:
                return marker
    if re.search(r"^make (demo|test)\b", block, flags=re.MULTILINE):
        return "the two commands: CI runs them"
    return None


def block_problems(root: Path = REPO) -> list[str]:
    problems = []
    for name in RUNNABLE_DOCS:
        doc = root / name
        if not doc.exists():
            problems.append(f"{name}: missing (a document whose commands the slow tier runs)")
            continue
        text = doc.read_text()
        if len(command_blocks(text)) != text.count("```bash"):
            problems.append(f"{name}: a ```bash fence the block parser does not see")
        for block, markers in command_blocks(text):
            first = block.strip().splitlines()[0] if block.strip() else "(empty)"
            unknown = [m for m in markers if m.startswith("needs:") and not exemption("", [m])]
            if unknown:
                problems.append(f"{name}: block `{first}` is marked {unknown[0]!r}, which the "
                                f"slow tier does not exempt: make it run offline after `make "
                                f"demo` or mark it needs: {' or '.join(EXEMPTING_NEEDS)}")
    return problems


# ---------------------------------------------------------------- tests where a newcomer looks
def library_modules(root: Path = REPO) -> list[Path]:
    """The library's modules with logic (a function or a class), relative to src/postrisk."""
    src = root / "src" / "postrisk"
    return [p.relative_to(src) for p in sorted(src.rglob("*.py"))
            if p.name != "__init__.py" and "data" not in p.relative_to(src).parts
            and re.search(r"^\s*(def|class) ", p.read_text(), flags=re.MULTILINE)]


def own_test(module: Path) -> Path:
    return Path("tests") / module.parent / f"test_{module.stem}.py"


def theme_tests(root: Path = REPO) -> dict[str, str]:
    """The contributor guide's table of modules tested by a theme test: the rows whose first
    cell is a library module (``src/postrisk/…``) and whose second is a test file."""
    rows = {}
    guide = root / CONTRIBUTING
    if not guide.exists():
        return rows
    for line in guide.read_text().splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].startswith("postrisk/") and cells[0].endswith(".py"):
            rows[cells[0].removeprefix("postrisk/")] = cells[1]
    return rows


def _defined_names(source: str) -> set[str]:
    """The functions and classes a module defines at its top level."""
    return {node.name for node in ast.parse(source).body
            if isinstance(node, ast.FunctionDef | ast.ClassDef)}


def _imports(test_text: str, module: Path, root: Path = REPO) -> bool:
    """Whether a test imports the module: by its dotted name, as a name of its package, or a
    function or class it defines through its package (``from postrisk.covariates import
    verify_covariates``)."""
    dotted = ".".join(("postrisk", *module.with_suffix("").parts))
    package, name = dotted.rsplit(".", 1)
    if dotted in test_text:
        return True
    imported = {alias.name for node in ast.walk(ast.parse(test_text))
                if isinstance(node, ast.ImportFrom) and node.module == package
                for alias in node.names}
    if name in imported:
        return True
    source = root / "src" / "postrisk" / module
    return bool(imported & _defined_names(source.read_text()))


def module_test_problems(root: Path = REPO) -> list[str]:
    problems = []
    listed = theme_tests(root)
    for module in library_modules(root):
        if (root / own_test(module)).exists():
            continue
        key = module.as_posix()
        test = listed.get(key)
        if test is None:
            problems.append(f"src/postrisk/{key}: no {own_test(module)}, and {CONTRIBUTING} "
                            "does not list the test that covers it")
        elif not (root / test).is_file():
            problems.append(f"{CONTRIBUTING}: postrisk/{key} → {test}: no such file")
        elif not _covers((root / test).read_text(), module, root):
            problems.append(f"{CONTRIBUTING}: postrisk/{key} → {test}: the test neither "
                            "imports the module nor runs the workflow")
    return problems


def _covers(test_text: str, module: Path, root: Path = REPO) -> bool:
    """A theme test covers a module it imports; a test of the workflow (marker ``workflow``:
    it runs Snakemake) covers the steps the rules call."""
    return _imports(test_text, module, root) or "mark.workflow" in test_text


CHECKS = {"links": link_problems, "section references": reference_problems,
          "command blocks": block_problems, "tests where a newcomer looks": module_test_problems}


def main() -> int:
    failed = 0
    for name, check in CHECKS.items():
        problems = check(REPO)
        for problem in problems:
            print(problem)
        print(f"docs check, {name}: {len(problems)} problem(s)", file=sys.stderr)
        failed += len(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
