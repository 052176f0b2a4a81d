"""`postrisk run` / `postrisk task`: which checkout's workflow runs, and the task key's names
checked before snakemake starts."""

import subprocess

import pytest

from postrisk import cli
from postrisk.cli import main
from postrisk.workflow import launch


def _checkout(folder):
    (folder / "rules").mkdir(parents=True)
    (folder / "Snakefile").write_text("# a fake checkout\n")
    return folder


@pytest.fixture
def no_snakemake(monkeypatch):
    """``subprocess.run`` of the command line recorded, not run."""
    calls = []

    def run(cmd, *args, **kwargs):
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(cli.subprocess, "run", run)
    return calls


def test_the_current_folders_checkout_comes_first(tmp_path, monkeypatch):
    """Fault: the package's own checkout was preferred to the one the command runs in."""
    mine = _checkout(tmp_path / "mine").resolve()
    monkeypatch.chdir(mine)
    assert launch.find_checkout() == (mine, "the current folder")
    (mine / "results").mkdir()
    monkeypatch.chdir(mine / "results")
    assert launch.find_checkout() == (mine, "a folder above the current one")
    monkeypatch.chdir(tmp_path)  # no checkout here or above: the installed package's
    assert launch.find_checkout() == (launch.PACKAGE_CHECKOUT, "the installed package's checkout")
    monkeypatch.setattr(launch, "PACKAGE_CHECKOUT", tmp_path / "wheel")
    with pytest.raises(FileNotFoundError, match="needs a checkout"):
        launch.checkout()


def test_the_command_line_says_which_snakefile(tmp_path, monkeypatch, capsys, no_snakemake):
    mine = _checkout(tmp_path / "mine").resolve()
    monkeypatch.chdir(mine)
    assert main(["task", "concrete/gp/smooth_monotone/balanced/0", "--cores", "1"]) == 0
    (cmd,) = no_snakemake
    assert cmd[3:5] == ["-s", str(mine / "Snakefile")]
    assert cmd[5] == "results/tasks/concrete/gp/smooth_monotone/balanced/0.zarr"
    err = capsys.readouterr().err
    assert f"workflow: {mine / 'Snakefile'} (of the current folder)" in err
    assert main(["run", "-n"]) == 0 and no_snakemake[-1][3:] == ["-s", str(mine / "Snakefile"),
                                                               "-n"]


@pytest.mark.parametrize(("key", "message"), [
    ("concret/gp/smooth_monotone/balanced/0",
     "concret/gp/smooth_monotone/balanced/0: unknown dataset 'concret' (did you mean concrete?)"),
    ("concrete/gq/smooth/balanced/0",
     "unknown prior 'gq' (did you mean gp?); unknown noise 'smooth' (did you mean "
     "smooth_monotone?)"),
    ("concrete/gp/bump/everywhere/0", "unknown coverage 'everywhere' (known: "),
    ("concrete/gp/bump", "'concrete/gp/bump' is not an instance key"),
])
def test_a_task_key_typo_is_one_line(key, message, capsys, no_snakemake):
    """Fault: a typo in `postrisk task KEY` reached snakemake (MissingRuleException)."""
    assert main(["task", key]) == 1
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], err
    assert no_snakemake == []  # snakemake never started
