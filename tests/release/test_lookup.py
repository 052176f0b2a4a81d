"""Looking tasks up by key: a misspelt name is an error with "did you mean", a valid name with
nothing under the root is an empty list, and a task that is not there says why, with the
download command only where downloading can fetch it — a command that works as written."""

from __future__ import annotations

import shlex
import shutil

import pytest

import postrisk
from postrisk.cli import main
from postrisk.release import MANIFEST
from tests.release.release_helpers import DROPPED, KEYS, served_with_base_url


def test_list_tasks_misspelt_names_raise_valid_absent_ones_match_nothing(release):
    out, _ = release
    with pytest.raises(LookupError, match=r"^no dataset 'concret' under .*, and postrisk knows "
                                          r"no such name; did you mean dataset 'concrete'\? "
                                          r"\(datasets here: airfoil, concrete\)$"):
        postrisk.list_tasks(out, dataset="concret")
    # not here, but postrisk's: suggested from postrisk's names
    with pytest.raises(LookupError, match="noise mode 'smooth_monotne'.*did you mean noise "
                                          "mode 'smooth_monotone'.*noise modes here: bump"):
        postrisk.list_tasks(out, noise=["bump", "smooth_monotne"])
    with pytest.raises(LookupError, match="did you mean coverage 'balanced'"):
        postrisk.list_tasks(out, coverage="balansed")
    with pytest.raises(LookupError, match="prior 'gpp'.*did you mean prior 'gp'"):
        postrisk.list_tasks(out, prior="gpp")
    with pytest.raises(LookupError, match=r"no seed -1 .*\(seeds here: 0, 1\)"):
        postrisk.list_tasks(out, seed=-1)
    with pytest.raises(LookupError, match="no dataset 'foo' and prior 'bar'"):
        postrisk.list_tasks(out, dataset="foo", prior="bar")
    # valid names with no task here: a legitimate empty result
    assert postrisk.list_tasks(out, prior="hbart") == []
    assert postrisk.list_tasks(out, dataset="abalone", noise="edges") == []
    assert postrisk.list_tasks(out, seed=[7]) == []
    assert postrisk.list_tasks(out, seed=1) == []  # not shipped: named by the release, no file
    assert [e.label for e in postrisk.list_tasks(out, seed="0", coverage="ood")] == \
        ["concrete/gp/bump/ood/0"]


def test_list_tasks_names_of_stores_are_valid(stores, tmp_path):
    """A results folder's names are valid there, even ones postrisk does not know."""
    root, _, _, _ = stores
    assert [e.label for e in postrisk.list_tasks(root, seed=1)] == [DROPPED.label]
    with pytest.raises(LookupError, match=r"did you mean dataset 'airfoil'\?"):
        postrisk.list_tasks(root, dataset="airfoi")
    empty = tmp_path / "nothing"
    with pytest.raises(LookupError, match="did you mean dataset 'concrete'.*no tasks here; "
                                          "postrisk's datasets: abalone, "):
        postrisk.list_tasks(empty, dataset="concret")


def test_load_task_misspelt_key_suggests_the_corrected_key(release, capsys):
    out, _ = release
    with pytest.raises(LookupError, match=r"did you mean concrete/gp/bump/balanced/0\?") as err:
        postrisk.load_task("concret/gp/bump/balanced/0", root=out)
    assert "postrisk download" not in str(err.value)
    with pytest.raises(LookupError, match="^no noise mode 'smooth_monotne' under .*did you "
                                          "mean "
                                          r"concrete/gp/smooth_monotone/balanced/0\?") as err:
        postrisk.load_task("concrete/gp/smooth_monotne/balanced/0", root=out)
    assert "postrisk download" not in str(err.value)
    with pytest.raises(LookupError, match=r"did you mean airfoil/gp/bump/ood/0\?"):
        postrisk.load_task("airfol/gp/bump/od/0", root=out)
    assert main(["info", "concret/gp/bump/balanced/0", "--root", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: no dataset 'concret' under ")


def test_load_task_valid_key_not_there_says_why(release, tmp_path):
    out, _ = release
    # the release does not ship it, or does not hold it: no download hint (it cannot help)
    with pytest.raises(LookupError, match=r"^task concrete/gp/bump/balanced/1 is not under "
                                          r".*: the release there does not ship it: seed 1 is "
                                          r"not valid; it holds seeds 0 for "
                                          r"concrete/gp/bump/balanced$"):
        postrisk.load_task(DROPPED.label, root=out)
    with pytest.raises(LookupError, match=r"^task abalone/gp/bump/balanced/0 is not under .*: "
                                          r"the release there holds no such task; it holds "
                                          r"datasets airfoil, concrete$"):
        postrisk.load_task("abalone/gp/bump/balanced/0", root=out)
    # in the release, its file not downloaded: the download that fetches it
    partial = tmp_path / "partial"
    shutil.copytree(out, partial)
    (partial / "airfoil_gp.zip").unlink()
    with pytest.raises(LookupError, match=r"it is in the release there, but its file "
                                          r"airfoil_gp.zip was not downloaded .*download it: "
                                          r"`postrisk download --url <release URL> --dataset "
                                          r"airfoil --prior gp --dest .*partial`"
                                          r" \(no release URL is configured in "
                                          r"release\.base_url: pass a release's address\)$"):
        postrisk.load_task(KEYS[3].label, root=partial)
    # nothing there
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(LookupError, match=r"is not under .*empty: there are no tasks there "
                                          r"\(no release manifest, no task stores\); download "
                                          r"the release: `postrisk download --url <release URL> "
                                          r"--dataset concrete --prior gp --dest .*empty`"
                                          r" \(no release URL is configured in "
                                          r"release\.base_url: pass a release's address\)$"):
        postrisk.load_task(KEYS[0].label, root=empty)
    with pytest.raises(LookupError, match=r"is not under .*missing: there is no such folder\. "
                                          r"Download the release into it \(`postrisk download "
                                          r"--url <release URL>"):
        postrisk.load_task(KEYS[0].label, root=tmp_path / "missing")


def test_load_task_download_hint_works_as_written(release, tmp_path, monkeypatch, capsys):
    """With release.base_url configured the hint has no --url; run as written, it fetches the
    task."""
    out, manifest = release
    dest = tmp_path / "my data"  # a space: the hint quotes it
    with served_with_base_url(out, tmp_path, monkeypatch):
        with pytest.raises(LookupError) as err:
            postrisk.load_task(KEYS[3].label, root=dest)
        hint = str(err.value).split("`")[1]
        assert hint == f"postrisk download --dataset airfoil --prior gp --dest '{dest}'"
        assert main(shlex.split(hint)[1:]) == 0
    capsys.readouterr()
    assert (dest / MANIFEST).is_file()
    postrisk.load_task(KEYS[3].label, root=dest, verify=True)


# -------------------------------------------------- the suite inside the package, without a root
@pytest.fixture
def fresh_home(tmp_path, monkeypatch):
    """A working folder without config.yaml, no $POSTRISK_DATA: the default root is the packaged
    configuration's release.download_dir, which is not there."""
    monkeypatch.delenv("POSTRISK_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_without_a_root_the_packaged_suite_is_listed_and_loaded(fresh_home, capsys):
    """Fault: list_tasks(), evaluate and info found the packaged instances only with a
    site-packages root."""
    from postrisk.release.load import embedded_root

    packaged = [e.label for e in postrisk.list_tasks(root=embedded_root())]
    assert len(packaged) > 0
    assert [e.label for e in postrisk.list_tasks()] == packaged
    assert [e.label for e in postrisk.list_tasks(prior="gp")] == [
        k for k in packaged if k.split("/")[1] == "gp"]
    task = postrisk.load_task(packaged[0])
    assert task.key == postrisk.get_task(packaged[0]).key
    assert main(["info", packaged[0]]) == 0
    assert packaged[0] in capsys.readouterr().out


def test_a_configured_root_comes_first(fresh_home, release, monkeypatch):
    """A key the configured root and the package both hold comes from the configured root; the
    rest of the package's instances are listed after it."""
    from postrisk.release.load import default_roots, embedded_root

    out, _ = release
    monkeypatch.setenv("POSTRISK_DATA", str(out))
    assert default_roots() == [out, embedded_root()]
    here = {e.label: e for e in postrisk.list_tasks()}
    assert set(here) == ({e.label for e in postrisk.list_tasks(root=out)}
                         | {e.label for e in postrisk.list_tasks(root=embedded_root())})
    for entry in postrisk.list_tasks(root=out):
        assert here[entry.label].path == entry.path
    # an explicit root is searched alone
    assert {e.label for e in postrisk.list_tasks(root=out)} <= set(here)
    assert all(e.path.parent == out for e in postrisk.list_tasks(root=out))


def test_a_key_held_nowhere_says_what_the_package_holds(fresh_home):
    with pytest.raises(LookupError, match=r"^task concrete/gp/bump/balanced/0 is not under "
                                          r"resources/release: there is no such folder\..*"
                                          r"Also searched: the suite inside the package \(it "
                                          r"holds noise modes smooth_monotone for "
                                          r"concrete/gp\)$"):
        postrisk.load_task("concrete/gp/bump/balanced/0")
