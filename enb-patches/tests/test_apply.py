"""apply.sh against tiny real git repositories: every refusal names its cause, a failed series leaves the base.

apply.sh reads the base tag and commit from BASE and the patch order from `series`, both next to it. Each test
copies apply.sh into a folder of its own with a BASE and a series made for a small repository built here, so
every check runs with real git and without srsRAN. One test applies the real series to a real release_23_11
clone when SRSRAN_REPO names a srsRAN_4G git repository (a clone or a mirror).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

PATCHES = Path(__file__).resolve().parent.parent
APPLY = PATCHES / "apply.sh"
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "test",
    "GIT_AUTHOR_EMAIL": "test@localhost",
    "GIT_COMMITTER_NAME": "test",
    "GIT_COMMITTER_EMAIL": "test@localhost",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], env=GIT_ENV, check=True, capture_output=True, text=True
    ).stdout.strip()


@dataclass(frozen=True)
class Setup:
    """A repository at its base tag, and a patches folder (apply.sh, BASE, series, patches) for it."""

    repo: Path
    patches: Path
    base: str


def run_apply(setup: Setup, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(setup.patches / "apply.sh"), *args], env=GIT_ENV, capture_output=True, text=True, timeout=60
    )


def make_setup(tmp_path: Path, second_patch_conflicts: bool = False) -> Setup:
    """Base: a.txt and b.txt at tag v1. Two patches: one edits a.txt, one adds c.txt (or edits a line that the
    base does not have, when `second_patch_conflicts`)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("one\ntwo\nthree\n")
    (repo / "b.txt").write_text("untouched\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "tag", "v1")
    base = git(repo, "rev-parse", "HEAD")

    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(repo), str(work))
    (work / "a.txt").write_text("one\nTWO\nthree\n")
    git(work, "commit", "-q", "-am", "first change")
    if second_patch_conflicts:
        (work / "a.txt").write_text("one\nTWO\nthree\nfour\n")
        git(work, "commit", "-q", "-am", "second change")
    else:
        (work / "c.txt").write_text("new\n")
        git(work, "add", "c.txt")
        git(work, "commit", "-q", "-m", "second change")

    patches = tmp_path / "patches"
    patches.mkdir()
    shutil.copy(APPLY, patches / "apply.sh")
    git(work, "format-patch", "-q", "-o", str(patches), f"{base}..HEAD")
    names = sorted(p.name for p in patches.glob("*.patch"))
    if second_patch_conflicts:
        # The second patch's context then is in neither the base nor the base plus the first patch.
        second = patches / names[1]
        second.write_text(second.read_text().replace(" three\n", " three and a half\n"))
    (patches / "series").write_text("# order of application\n" + "\n".join(names) + "\n")
    (patches / "BASE").write_text(f"v1 {base}\n")
    return Setup(repo=repo, patches=patches, base=base)


def test_series_applies_in_order_on_the_base(tmp_path: Path) -> None:
    setup = make_setup(tmp_path)
    result = run_apply(setup, str(setup.repo))
    assert result.returncode == 0, result.stderr
    assert git(setup.repo, "log", "--format=%s", "-2").split("\n") == ["second change", "first change"]
    assert git(setup.repo, "rev-parse", "HEAD~2") == setup.base
    assert "2 patches on v1" in result.stdout


def test_usage_without_a_directory(tmp_path: Path) -> None:
    result = run_apply(make_setup(tmp_path))
    assert result.returncode == 2
    assert result.stderr.startswith("usage: apply.sh SRSRAN_DIR")


def test_missing_directory_is_named(tmp_path: Path) -> None:
    result = run_apply(make_setup(tmp_path), str(tmp_path / "nowhere"))
    assert result.returncode == 1
    assert result.stderr == f"apply.sh: {tmp_path / 'nowhere'} is not a directory\n"


def test_directory_that_is_not_a_git_work_tree(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    result = run_apply(make_setup(tmp_path), str(plain))
    assert result.returncode == 1
    assert f"apply.sh: {plain} is not a git work tree" in result.stderr


def test_checkout_at_another_commit_is_refused_naming_the_base(tmp_path: Path) -> None:
    setup = make_setup(tmp_path)
    (setup.repo / "b.txt").write_text("later\n")
    git(setup.repo, "commit", "-q", "-am", "later work")
    head = git(setup.repo, "rev-parse", "HEAD")
    result = run_apply(setup, str(setup.repo))
    assert result.returncode == 1
    assert f"is at {head} (v1-1-g{head[:7]}), not v1 ({setup.base})" in result.stderr
    assert git(setup.repo, "rev-parse", "HEAD") == head


def test_moved_tag_is_refused(tmp_path: Path) -> None:
    setup = make_setup(tmp_path)
    (setup.repo / "b.txt").write_text("later\n")
    git(setup.repo, "commit", "-q", "-am", "later work")
    git(setup.repo, "tag", "-f", "v1")
    git(setup.repo, "checkout", "-q", setup.base)
    result = run_apply(setup, str(setup.repo))
    assert result.returncode == 1
    assert f"tag v1 in {setup.repo} points to {git(setup.repo, 'rev-parse', 'v1')}, not to {setup.base}" in (
        result.stderr
    )


def test_staged_change_is_refused(tmp_path: Path) -> None:
    setup = make_setup(tmp_path)
    (setup.repo / "b.txt").write_text("staged\n")
    git(setup.repo, "add", "b.txt")
    result = run_apply(setup, str(setup.repo))
    assert result.returncode == 1
    assert "has staged changes: b.txt" in result.stderr


def test_local_change_is_refused_naming_the_file(tmp_path: Path) -> None:
    setup = make_setup(tmp_path)
    (setup.repo / "a.txt").write_text("edited\n")
    result = run_apply(setup, str(setup.repo))
    assert result.returncode == 1
    assert "has a local change to a.txt ( M); commit, stash or discard it first" in result.stderr


def test_missing_file_the_series_does_not_touch_is_only_noted(tmp_path: Path) -> None:
    setup = make_setup(tmp_path)
    (setup.repo / "b.txt").unlink()
    result = run_apply(setup, str(setup.repo))
    assert result.returncode == 0, result.stderr
    assert "note: 1 tracked file(s) missing from the work tree, not touched by the series: b.txt" in result.stderr


def test_series_naming_an_absent_patch_is_refused(tmp_path: Path) -> None:
    setup = make_setup(tmp_path)
    (setup.patches / "series").write_text("0001-first-change.patch\n0009-gone.patch\n")
    result = run_apply(setup, str(setup.repo))
    assert result.returncode == 1
    assert f"series lists 0009-gone.patch, which is not in {setup.patches}" in result.stderr
    assert git(setup.repo, "rev-parse", "HEAD") == setup.base


def test_malformed_base_file_is_refused(tmp_path: Path) -> None:
    setup = make_setup(tmp_path)
    (setup.patches / "BASE").write_text("v1\n")
    result = run_apply(setup, str(setup.repo))
    assert result.returncode == 1
    assert "BASE must hold 'TAG COMMIT'" in result.stderr


def test_patch_that_does_not_apply_leaves_the_checkout_at_the_base(tmp_path: Path) -> None:
    setup = make_setup(tmp_path, second_patch_conflicts=True)
    result = run_apply(setup, str(setup.repo))
    assert result.returncode == 1
    second = sorted(p.name for p in setup.patches.glob("*.patch"))[1]
    assert f"apply.sh: patch 2/2 {second} does not apply to {setup.repo}; it is back at v1." in result.stderr
    assert "git am said:" in result.stderr
    assert git(setup.repo, "rev-parse", "HEAD") == setup.base
    assert git(setup.repo, "status", "--porcelain") == ""
    assert not (setup.repo / git(setup.repo, "rev-parse", "--git-path", "rebase-apply")).exists()


def test_git_am_in_progress_is_refused(tmp_path: Path) -> None:
    setup = make_setup(tmp_path, second_patch_conflicts=True)
    patches = sorted(str(p) for p in setup.patches.glob("*.patch"))
    subprocess.run(["git", "-C", str(setup.repo), "am", *patches], env=GIT_ENV, capture_output=True)
    result = run_apply(setup, str(setup.repo))
    assert result.returncode == 1
    assert "a git am or rebase is in progress" in result.stderr
    assert f"git -C {setup.repo} am --abort" in result.stderr


@pytest.mark.skipif(
    not os.environ.get("SRSRAN_REPO"),
    reason="SRSRAN_REPO is not set (a srsRAN_4G git repository holding release_23_11, e.g. a clone or mirror)",
)
def test_real_series_applies_to_a_fresh_release_23_11_clone(tmp_path: Path) -> None:
    clone = tmp_path / "srsRAN_4G"
    git(tmp_path, "clone", "-q", "--no-checkout", os.environ["SRSRAN_REPO"], str(clone))
    # Snapshots without srsRAN's large test-data blobs cannot check those files out: that is not an error here.
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", "-f", "release_23_11"], env=GIT_ENV, capture_output=True)
    result = subprocess.run(["bash", str(APPLY), str(clone)], env=GIT_ENV, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    series = [line for line in (PATCHES / "series").read_text().split("\n") if line.strip()]
    assert git(clone, "rev-list", "--count", "release_23_11..HEAD") == str(len(series))
