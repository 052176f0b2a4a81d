"""Every command block of the README and of the user guide runs as written: on a fresh copy of
the checkout, with an empty ``HOME`` and no network, in the order the documents give them (the
README's, then the guide's), after the README's first command, ``make demo`` (the copy gets the
results of the slow tier's demo run, ``demo`` in tests/workflow/conftest.py, with their time
stamps).

Blocks a marker exempts are not run here (``tools/docs_check.py``, run by ``make lint``, fails
on any other exemption): ``<!-- needs: network -->`` or ``<!-- needs: cluster -->`` before a
block; the two commands (``make demo``, ``make test``: CI runs them); the release and evaluate
snippets (``<!-- release-snippet -->``, ``<!-- evaluate-snippet -->``), which need a published
release and run as written against a loopback server in ``test_workflow.test_release_round_trip``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest
from tools.docs_check import RUNNABLE_DOCS, SNIPPETS, command_blocks, exemption

from tests.workflow_helpers import REPO

pytestmark = [pytest.mark.slow, pytest.mark.workflow]

#: The slow-tier budget for all the documents' offline blocks together (seconds).
BUDGET_S = 300


def test_the_documents_blocks_are_found_and_marked():
    """The parser sees every block, every document has one it runs, and the README holds both
    snippets the release round trip runs."""
    for name in RUNNABLE_DOCS:
        text = (REPO / name).read_text()
        blocks = command_blocks(text)
        assert len(blocks) == text.count("```bash"), name
        assert any(exemption(b, m) is None for b, m in blocks), f"{name}: no offline block"
    readme = [exemption(b, m) for b, m in command_blocks((REPO / "README.md").read_text())]
    assert sum(r is not None and "snippet" in r for r in readme) == len(SNIPPETS)


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


def test_every_offline_documented_command_runs_as_written(demo, tmp_path):
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
    for name in RUNNABLE_DOCS:
        for block, markers in command_blocks((checkout / name).read_text()):
            if exemption(block, markers):
                continue
            left = BUDGET_S * 2 - (time.perf_counter() - t0)  # the guard: far beyond the budget
            start = time.perf_counter()
            run = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=checkout,
                                 env=env, capture_output=True, text=True, timeout=max(left, 1))
            assert run.returncode == 0, f"{name} block failed:\n{block}\n{run.stderr[-3000:]}"
            ran.append((time.perf_counter() - start, name, block.strip()))
    assert {name for _, name, _ in ran} == set(RUNNABLE_DOCS)
    for seconds, name, block in ran:
        print(f"{seconds:6.1f} s  {name}: {block.splitlines()[0]}")
