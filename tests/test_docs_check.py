"""The documentation's checks (tools/docs_check.py, run by `make lint`) find what they are for:
each check on a small repository written here, once clean and once with one fault planted, and
GitHub's anchors of headings written out by hand."""

from __future__ import annotations

import textwrap

import pytest
from tools.docs_check import (
    anchors,
    block_problems,
    command_blocks,
    exemption,
    link_problems,
    module_test_problems,
    reference_problems,
    slug,
)


@pytest.mark.parametrize(("heading", "anchor"), [
    ("Noise strength against the paper's AU–EU coupling",
     "noise-strength-against-the-papers-aueu-coupling"),
    ("The 1-D sandbox (Paplhám et al., 2026, §4.2)", "the-1-d-sandbox-paplhám-et-al-2026-42"),
    ("Downloading: `postrisk download`", "downloading-postrisk-download"),
    ("Metrics per (method, instance)", "metrics-per-method-instance"),
    ("snake_case and UPPER", "snake_case-and-upper"),
])
def test_slug_is_githubs_anchor(heading, anchor):
    assert slug(heading) == anchor


def test_a_repeated_heading_gets_a_numbered_anchor():
    assert anchors("# A\n\n## B\n\n## B\n\n### B\n") == {"a", "b", "b-1", "b-2"}


def _write(root, files: dict[str, str]):
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))


def _repo(tmp_path, **changes):
    files = {
        "README.md": "# P\n\nSee [the guide](docs/guide.md#the-command-line) and "
                     "[the web](https://example.org/nowhere).\n",
        "docs/guide.md": "# Guide\n\n## The command line\n\nBack to [the top](#guide) and "
                         "[design](design.md#layout).\n\n```bash\necho hi\n```\n",
        "docs/design.md": "# Design\n\n## Layout\n\n## Is it a proxy? (App. D.3)\n",
        "docs/contributing.md": "# C\n\n| module | tested in |\n|---|---|\n"
                                "| `postrisk/b.py` | `tests/test_theme.py` |\n",
        "src/postrisk/a.py": "# docs/design.md, \"Layout\"\ndef f():\n    return 1\n",
        "src/postrisk/b.py": "# design.md, \"Is it a proxy?\"\nclass B:\n    pass\n",
        "src/postrisk/c.py": "X = 1\n",  # no logic: needs no test
        "tests/test_a.py": "def test_f():\n    pass\n",
        "tests/test_theme.py": "from postrisk import b\n",
    }
    files.update(changes)
    _write(tmp_path, files)
    return tmp_path


CHECKS = (link_problems, reference_problems, block_problems, module_test_problems)


def test_a_clean_repository_has_no_problem(tmp_path):
    root = _repo(tmp_path)
    assert [check(root) for check in CHECKS] == [[], [], [], []]


@pytest.mark.parametrize(("change", "check", "message"), [
    ({"README.md": "[x](docs/missing.md)\n"}, link_problems, "docs/missing.md does not exist"),
    ({"README.md": "[x](docs/guide.md#the-commandline)\n"}, link_problems,
     "guide.md has no heading with anchor #the-commandline"),
    ({"src/postrisk/a.py": "# docs/design.md, \"Layouts\"\ndef f(): ...\n"}, reference_problems,
     "docs/design.md has no such heading"),
    ({"src/postrisk/a.py": "# docs/designs.md, \"Layout\"\ndef f(): ...\n"}, reference_problems,
     "there is no docs/designs.md"),
    ({"docs/guide.md": "# G\n\n<!-- needs: hours -->\n```bash\nmake paper-slice\n```\n"},
     block_problems, "is marked 'needs: hours'"),
    ({"src/postrisk/d.py": "def g():\n    return 2\n"}, module_test_problems,
     "no tests/test_d.py"),
    ({"tests/test_theme.py": "import numpy\n"}, module_test_problems,
     "neither imports the module nor runs the workflow"),
])
def test_each_check_finds_its_fault(tmp_path, change, check, message):
    problems = check(_repo(tmp_path, **change))
    assert len(problems) == 1 and message in problems[0], problems


def test_a_wrapped_reference_in_a_comment_is_read_whole(tmp_path):
    root = _repo(tmp_path, **{"config.yaml": "# see docs/design.md, \"Is it\n# a proxy?\")\n"})
    assert reference_problems(root) == []
    root = _repo(tmp_path, **{"config.yaml": "# see docs/design.md, \"Is it\n# a proxi?\")\n"})
    assert len(reference_problems(root)) == 1


def test_blocks_their_markers_and_exemptions():
    text = ("<!-- needs: network (a release) -->\n```bash\ncurl x\n```\n\n"
            "<!-- needs: cluster -->\n\n```bash\nsbatch y\n```\n"
            "<!-- release-snippet -->\n```bash\npython z\n```\n```bash\nmake demo\n```\n"
            "```bash\nls\n```\n")
    blocks = command_blocks(text)
    assert [b for b, _ in blocks] == ["curl x\n", "sbatch y\n", "python z\n", "make demo\n",
                                      "ls\n"]
    reasons = [exemption(b, m) for b, m in blocks]
    assert reasons[0] == "needs: network (a release)" and reasons[1] == "needs: cluster"
    assert "run by test_release_round_trip" in reasons[2]
    assert reasons[3] == "the two commands: CI runs them" and reasons[4] is None
    assert exemption("ls\n", ["needs: hours"]) is None
