"""Every command block of the README runs as written: on a fresh copy of the checkout, with an
empty ``HOME`` and no network, in the order the README gives them, after its first command,
``make demo`` (the copy gets the results of the slow tier's demo run, ``demo`` in
tests/workflow/conftest.py, with their time stamps).

Blocks a marker exempts are not run here: ``<!-- needs: network -->`` (or ``cluster``) before a
block; the two commands (``make demo``, ``make test``: CI runs them); the release and evaluate
snippets (``<!-- release-snippet -->``, ``<!-- evaluate-snippet -->``), which need a published
release and run as written against a loopback server in ``test_workflow.test_release_round_trip``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time

import pytest

from tests.workflow_helpers import REPO

pytestmark = [pytest.mark.slow, pytest.mark.workflow]

#: Markers that exempt a block (the words after ``needs:``).
OFFLINE_EXEMPT = {"network", "cluster"}
#: Snippet markers whose blocks run elsewhere (test_workflow.test_release_round_trip).
SNIPPETS = {"release-snippet", "evaluate-snippet"}
#: The README's slow-tier budget for all its offline blocks together (seconds).
BUDGET_S = 180

_BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)
_COMMENT = re.compile(r"<!--\s*(.*?)\s*-->")


def readme_blocks(text: str) -> list[tuple[str, list[str]]]:
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
    """Why a block is not run offline here, or None where it is."""
    for marker in markers:
        if marker in SNIPPETS:
            return f"{marker}: run by test_release_round_trip"
        if marker.startswith("needs:"):
            needs = {w.strip() for w in marker.removeprefix("needs:").split(",")}
            if needs & OFFLINE_EXEMPT:
                return marker
    if re.search(r"^make (demo|test)\b", block, flags=re.MULTILINE):
        return "the two commands: CI runs them"
    return None


def test_readme_blocks_are_found_and_marked():
    """The parser sees every block, and every exemption is one of the known kinds."""
    blocks = readme_blocks((REPO / "README.md").read_text())
    assert len(blocks) == (REPO / "README.md").read_text().count("```bash")
    reasons = [exemption(b, m) for b, m in blocks]
    assert any(r is None for r in reasons), "the README has no offline command block"
    assert sum(r is not None and "snippet" in r for r in reasons) == len(SNIPPETS)


def _fresh_copy(dest):
    """The checkout's files as a fresh clone has them (tracked and untracked-but-not-ignored,
    so uncommitted work is tested too), with this environment's .venv linked in."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    (dest / ".venv").symlink_to(REPO / ".venv")


def test_every_offline_readme_command_runs_as_written(demo, tmp_path):
    checkout, home = tmp_path / "postrisk", tmp_path / "home"
    checkout.mkdir()
    home.mkdir()
    _fresh_copy(checkout)
    shutil.copytree(demo / "results", checkout / "results", symlinks=True)  # `make demo` ran
    # no network: every HTTP(S) request goes to a closed port on loopback
    offline = {"HOME": str(home), "HTTP_PROXY": "http://127.0.0.1:9",
               "HTTPS_PROXY": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9",
               "https_proxy": "http://127.0.0.1:9", "NO_PROXY": "", "no_proxy": ""}
    env = {k: v for k, v in os.environ.items() if k not in ("POSTRISK_DATA",)}
    env.update(offline)
    t0 = time.perf_counter()
    ran = []
    for block, markers in readme_blocks((checkout / "README.md").read_text()):
        if exemption(block, markers):
            continue
        left = BUDGET_S * 2 - (time.perf_counter() - t0)  # the guard: far beyond the budget
        start = time.perf_counter()
        run = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=checkout, env=env,
                             capture_output=True, text=True, timeout=max(left, 1))
        assert run.returncode == 0, f"README block failed:\n{block}\n{run.stderr[-3000:]}"
        ran.append((time.perf_counter() - start, block.strip()))
    assert ran
    for seconds, block in ran:
        print(f"{seconds:6.1f} s  {block}")
