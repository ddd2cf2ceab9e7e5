"""build.sh against tiny real git repositories, with fake cmake, make, ctest and pkg-config that record their calls.

Each test makes an "upstream" repository with a base tag, a patches folder holding copies of build.sh and apply.sh
with a BASE and a series made for that repository (as test_apply.py does), and a folder of fake build tools put
first on PATH. git is real: build.sh clones, sparse-checks out and applies for real; the fakes write one line per
call (tool, working directory, niceness, arguments) and make creates the programs it was asked for.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

PATCHES = Path(__file__).resolve().parent.parent
BUILD_SH = PATCHES / "build.sh"
APPLY = PATCHES / "apply.sh"
GIT_ENV = {
    **{key: value for key, value in os.environ.items() if not key.startswith("SRSRAN_")},
    "GIT_AUTHOR_NAME": "test",
    "GIT_AUTHOR_EMAIL": "test@localhost",
    "GIT_COMMITTER_NAME": "test",
    "GIT_COMMITTER_EMAIL": "test@localhost",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}
TEST_TARGETS = ["telemetry_message_test", "telemetry_config_test", "telemetry_exporter_test"]
PROGRAMS = ["srsenb", "srsue", "srsepc"]
OWN_CMAKE_ARGS = ["-DENABLE_ZEROMQ=ON", "-DCMAKE_BUILD_TYPE=Release"]

# One script for every fake tool; it knows which one it is by its name.
FAKE_TOOL = r"""#!/bin/bash
name="$(basename "$0")"
{ printf '%s\t%s\t%s' "$name" "$PWD" "$(nice)"; printf '\t%s' "$@"; printf '\n'; } >> "$FAKE_LOG"
case "$name" in
    cmake) mkdir -p CMakeFiles; exit "${FAKE_CMAKE_RC:-0}" ;;
    make)
        if [[ " $* " == *" help "* ]]; then
            echo "The following are some of the valid targets for this Makefile:"
            echo "... srsenb"
            [ -z "${FAKE_UHD:-}" ] || echo "... srsran_rf_uhd"
            exit 0
        fi
        for program in srsenb srsue srsepc; do
            if [[ " $* " == *" $program "* ]]; then
                mkdir -p "$program/src" && printf '#!/bin/sh\n' > "$program/src/$program"
                chmod +x "$program/src/$program"
            fi
        done
        exit "${FAKE_MAKE_RC:-0}" ;;
    ctest)
        if [ "${FAKE_CTEST_RC:-0}" = 0 ]; then echo "100% tests passed, 0 tests failed out of 3"
        else echo "67% tests passed, 1 tests failed out of 3"; fi
        exit "${FAKE_CTEST_RC:-0}" ;;
    pkg-config) [ "$1" = --exists ] && exit "${FAKE_ZMQ_RC:-0}"; exit 1 ;;
esac
"""
FAKES = ("cmake", "make", "ctest", "pkg-config")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], env=GIT_ENV, check=True, capture_output=True, text=True
    ).stdout.strip()


@dataclass(frozen=True)
class Call:
    tool: str
    cwd: str
    niceness: int
    args: list[str]


@dataclass(frozen=True)
class Setup:
    upstream: Path
    patches: Path
    base: str
    vectors: Path
    fakes: Path
    log: Path
    work: Path

    @property
    def src(self) -> Path:
        return self.work / "srsRAN_4G"

    @property
    def build(self) -> Path:
        return self.work / "build"

    def calls(self, tool: str | None = None) -> list[Call]:
        if not self.log.exists():
            return []
        calls = []
        for line in self.log.read_text().splitlines():
            name, cwd, niceness, *args = line.split("\t")
            calls.append(Call(name, cwd, int(niceness), args))
        return [call for call in calls if tool is None or call.tool == tool]


def make_setup(tmp_path: Path) -> Setup:
    """Upstream: a.txt, b.txt and an I/Q signal sig/iq.data at tag v1, then a later commit. The series: one patch
    edits a.txt, one adds c.txt."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q", "-b", "main")
    (upstream / "a.txt").write_text("one\ntwo\nthree\n")
    (upstream / "b.txt").write_text("untouched\n")
    (upstream / "sig").mkdir()
    (upstream / "sig" / "iq.data").write_bytes(b"\x00\x01" * 64)
    git(upstream, "add", ".")
    git(upstream, "commit", "-q", "-m", "base")
    git(upstream, "tag", "v1")
    base = git(upstream, "rev-parse", "HEAD")

    scratch = tmp_path / "scratch"
    git(tmp_path, "clone", "-q", str(upstream), str(scratch))
    (scratch / "a.txt").write_text("one\nTWO\nthree\n")
    git(scratch, "commit", "-q", "-am", "first change")
    (scratch / "c.txt").write_text("new\n")
    git(scratch, "add", "c.txt")
    git(scratch, "commit", "-q", "-m", "second change: [telemetry] c.txt")

    patches = tmp_path / "patches"
    patches.mkdir()
    shutil.copy(BUILD_SH, patches / "build.sh")
    shutil.copy(APPLY, patches / "apply.sh")
    git(scratch, "format-patch", "-q", "-o", str(patches), f"{base}..HEAD")
    names = sorted(p.name for p in patches.glob("*.patch"))
    (patches / "series").write_text("# order of application\n" + "\n".join(names) + "\n")
    (patches / "BASE").write_text(f"v1 {base}\n")

    # Upstream moves on after the tag: the clone must still be at v1.
    (upstream / "b.txt").write_text("later\n")
    git(upstream, "commit", "-q", "-am", "later upstream work")

    vectors = tmp_path / "vectors"
    vectors.mkdir()
    (vectors / "valid.json").write_text("{}\n")

    fakes = tmp_path / "fakes"
    fakes.mkdir()
    for tool in FAKES:
        (fakes / tool).write_text(FAKE_TOOL)
        (fakes / tool).chmod(0o755)
    return Setup(upstream, patches, base, vectors, fakes, tmp_path / "calls.log", tmp_path / "srsran")


def run_build(
    setup: Setup, *args: str, env: dict[str, str] | None = None, path: str | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {
        **GIT_ENV,
        "PATH": path or f"{setup.fakes}:{os.environ['PATH']}",
        "FAKE_LOG": str(setup.log),
        **(env or {}),
    }
    argv = [shutil.which("bash") or "/bin/bash", str(setup.patches / "build.sh")]
    argv += ["--repo", f"file://{setup.upstream}", "--dir", str(setup.work), "--vectors", str(setup.vectors), *args]
    return subprocess.run(argv, env=full_env, capture_output=True, text=True, timeout=120)


def expected_niceness(increment: int) -> int:
    return min(19, os.nice(0) + increment)


def test_fresh_run_clones_applies_builds_tests_and_prints_the_export_line(tmp_path: Path) -> None:
    setup = make_setup(tmp_path)
    result = run_build(setup, "--jobs", "3", "--nice", "7")
    assert result.returncode == 0, result.stderr

    # Cloned at v1 (not upstream's later commit), without the I/Q signal, the series applied on top.
    assert git(setup.src, "rev-parse", "HEAD~2") == setup.base
    subjects = git(setup.src, "log", "--format=%s", "-2").split("\n")
    assert subjects == ["second change: [telemetry] c.txt", "first change"]
    assert (setup.src / "a.txt").read_text() == "one\nTWO\nthree\n"
    assert (setup.src / "c.txt").exists()
    assert (setup.src / "b.txt").read_text() == "untouched\n"
    assert not (setup.src / "sig" / "iq.data").exists()
    assert git(setup.src, "status", "--porcelain", "--untracked-files=no") == ""
    assert "applied: first change" in result.stdout

    build = str(setup.build)
    assert [call.tool for call in setup.calls() if call.tool != "pkg-config"] == ["cmake", "make", "make", "ctest"]
    (cmake,) = setup.calls("cmake")
    assert cmake.cwd == build
    assert cmake.args == [str(setup.src), *OWN_CMAKE_ARGS, f"-DSRSENB_TELEMETRY_VECTORS={setup.vectors}"]
    help_call, make = setup.calls("make")
    assert "help" in help_call.args
    assert help_call.cwd == make.cwd == build
    assert make.args == ["-j", "3", *PROGRAMS, "srsran_rf_zmq", *TEST_TARGETS]
    assert make.niceness == expected_niceness(7)
    (ctest,) = setup.calls("ctest")
    assert ctest.cwd == build
    assert ctest.args == ["-R", "telemetry", "--output-on-failure"]
    assert "UHD not found" in result.stdout
    assert "100% tests passed" in result.stdout
    assert result.stdout.splitlines()[-1] == f"export SRSRAN_BUILD={build}"


def test_defaults_uhd_extra_cmake_arguments_and_no_tests(tmp_path: Path) -> None:
    setup = make_setup(tmp_path)
    result = run_build(
        setup, "--no-tests", "--cmake-arg", "-DENABLE_GUI=OFF", env={"FAKE_UHD": "1", "SRSRAN_CMAKE_ARGS": "-DX=1"}
    )
    assert result.returncode == 0, result.stderr
    (cmake,) = setup.calls("cmake")
    assert cmake.args == [str(setup.src), *OWN_CMAKE_ARGS, "-DX=1", "-DENABLE_GUI=OFF"]
    make = setup.calls("make")[-1]
    jobs = str(len(os.sched_getaffinity(0)))
    assert make.args == ["-j", jobs, *PROGRAMS, "srsran_rf_zmq", "srsran_rf_uhd"]
    assert make.niceness == expected_niceness(10)
    assert setup.calls("ctest") == []
    assert "UHD found: building srsran_rf_uhd" in result.stdout
    assert result.stdout.splitlines()[-1] == f"export SRSRAN_BUILD={setup.build}"


def test_explicit_targets_replace_the_default_ones_option_equals_value(tmp_path: Path) -> None:
    setup = make_setup(tmp_path)
    # The Ansible role passes them as --option=value.
    result = run_build(setup, "--target", "srsenb", "--target=srsran_rf_zmq", "--jobs", "1", "--cmake-arg=-DA=B=C")
    assert result.returncode == 0, result.stderr
    assert setup.calls("cmake")[0].args[-1] == "-DA=B=C"
    (make,) = setup.calls("make")
    assert make.args == ["-j", "1", "srsenb", "srsran_rf_zmq", *TEST_TARGETS]


def test_rerun_on_an_already_patched_source_does_not_apply_again(tmp_path: Path) -> None:
    setup = make_setup(tmp_path)
    assert run_build(setup).returncode == 0
    head = git(setup.src, "rev-parse", "HEAD")
    setup.log.unlink()

    other_build = tmp_path / "other-build"
    result = run_build(setup, "--source", str(setup.src), "--build", str(other_build))
    assert result.returncode == 0, result.stderr
    assert f"{setup.src} holds the series already (2 patches on v1" in result.stdout
    assert "applied:" not in result.stdout
    assert git(setup.src, "rev-parse", "HEAD") == head
    assert [call.tool for call in setup.calls() if call.tool != "pkg-config"] == ["cmake", "make", "make", "ctest"]
    assert setup.calls("cmake")[0].cwd == str(other_build)
    assert result.stdout.splitlines()[-1] == f"export SRSRAN_BUILD={other_build}"


def test_rerun_on_a_finished_build_builds_nothing_until_something_changes(tmp_path: Path) -> None:
    setup = make_setup(tmp_path)

    def built(*args: str) -> bool:
        """Runs build.sh; whether it configured, built and tested (else it said the build is up to date)."""
        if setup.log.exists():
            setup.log.unlink()
        result = run_build(setup, *args)
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines()[-1] == f"export SRSRAN_BUILD={setup.build}"
        tools = [call.tool for call in setup.calls() if call.tool != "pkg-config"]
        if tools:
            assert tools == ["cmake", "make", "make", "ctest"]
            assert "is up to date" not in result.stdout
            return True
        assert f"{setup.build} is up to date" in result.stdout
        return False

    assert built()
    assert not built()
    assert built("--force")
    assert not built()
    # Other options: built; the same again: not; back to the first options: built.
    assert built("--cmake-arg", "-DENABLE_GUI=OFF")
    assert not built("--cmake-arg", "-DENABLE_GUI=OFF")
    assert built()
    assert not built()
    # A local change in the source: built, every time while it is there.
    (setup.src / "a.txt").write_text("edited\n")
    assert built()
    assert built()


@pytest.mark.parametrize("where", ["later upstream commit", "unrelated history", "other series"])
def test_source_at_another_commit_is_refused_in_one_line(tmp_path: Path, where: str) -> None:
    setup = make_setup(tmp_path)
    if where == "unrelated history":
        setup.src.mkdir(parents=True)
        git(setup.src, "init", "-q", "-b", "main")
        (setup.src / "a.txt").write_text("something else\n")
        git(setup.src, "add", ".")
        git(setup.src, "commit", "-q", "-m", "first change")
    else:
        git(tmp_path, "clone", "-q", str(setup.upstream), str(setup.src))
    if where == "other series":
        git(setup.src, "checkout", "-q", setup.base)
        (setup.src / "a.txt").write_text("other\n")
        git(setup.src, "commit", "-q", "-am", "first change")
        (setup.src / "d.txt").write_text("other\n")
        git(setup.src, "add", "d.txt")
        git(setup.src, "commit", "-q", "-m", "something else")
    head = git(setup.src, "rev-parse", "HEAD")

    result = run_build(setup)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"build.sh: {setup.src} is at {head} (")
    reason = {
        "later upstream commit": "1 commit(s) past v1; the series has 2 patches",
        "unrelated history": f"not on v1 ({setup.base})",
        "other series": "commit 2 past v1 is 'something else', patch 2 of the series is 'second change: [telemetry] c",
    }[where]
    assert reason in result.stderr
    assert "it is neither v1 nor the series applied on it" in result.stderr
    assert git(setup.src, "rev-parse", "HEAD") == head
    assert [call.tool for call in setup.calls() if call.tool != "pkg-config"] == []
    assert not setup.build.exists()


def test_check_source_says_what_it_would_do_and_changes_nothing(tmp_path: Path) -> None:
    setup = make_setup(tmp_path)
    absent = run_build(setup, "--check-source")
    assert absent.returncode == 0, absent.stderr
    assert "does not exist: it will be cloned" in absent.stdout
    assert not setup.src.exists()

    assert run_build(setup).returncode == 0
    applied = run_build(setup, "--check-source")
    assert applied.returncode == 0, applied.stderr
    assert f"{setup.src} holds the series (2 patches on v1)" in applied.stdout

    git(setup.src, "reset", "-q", "--hard", "HEAD~1")
    partial = run_build(setup, "--check-source")
    assert partial.returncode == 1
    assert "1 commit(s) past v1; the series has 2 patches" in partial.stderr


@pytest.mark.parametrize("tool", ["git", "cmake", "make", "ctest"])
def test_missing_tool_is_refused(tmp_path: Path, tool: str) -> None:
    setup = make_setup(tmp_path)
    # A PATH of its own: the fakes and every other program of the usual PATH, except `tool`.
    only = tmp_path / "path"
    only.mkdir()
    for folder in [str(setup.fakes), *os.environ["PATH"].split(":")]:
        if not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            target = only / entry.name
            if entry.name != tool and not target.exists() and os.access(entry.path, os.X_OK):
                target.symlink_to(entry.path)
    result = run_build(setup, path=str(only))
    assert result.returncode == 1
    assert result.stderr.startswith(f"build.sh: not installed: {tool} (Debian: apt-get install")
    assert result.stderr.count("\n") == 1, result.stderr
    assert not setup.src.exists()


def test_missing_libzmq_is_refused(tmp_path: Path) -> None:
    setup = make_setup(tmp_path)
    result = run_build(setup, env={"FAKE_ZMQ_RC": "1"})
    assert result.returncode == 1
    assert result.stderr == (
        "build.sh: libzmq is not installed (pkg-config knows no libzmq): apt-get install libzmq3-dev\n"
    )
    assert not setup.src.exists()


def test_failing_unit_tests_fail_the_run_without_an_export_line(tmp_path: Path) -> None:
    setup = make_setup(tmp_path)
    result = run_build(setup, env={"FAKE_CTEST_RC": "8"})
    assert result.returncode == 1
    assert f"build.sh: the series' unit tests failed in {setup.build}" in result.stderr
    assert "export SRSRAN_BUILD" not in result.stdout
    assert not (setup.build / "rnf-build.stamp").exists()
    # The next run builds and tests again instead of taking the failed build as done.
    setup.log.unlink()
    again = run_build(setup)
    assert again.returncode == 0, again.stderr
    assert setup.calls("ctest")


def test_missing_vectors_are_refused(tmp_path: Path) -> None:
    setup = make_setup(tmp_path)
    shutil.rmtree(setup.vectors)
    result = run_build(setup)
    assert result.returncode == 1
    assert result.stderr == (
        f"build.sh: the telemetry golden vectors {setup.vectors} are not there (--vectors DIR, or --no-tests)\n"
    )
