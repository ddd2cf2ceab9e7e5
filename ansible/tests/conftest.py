"""A Debian 12 root to converge the playbooks into, with Ansible's chroot connection, without Docker.

The root is built once per machine with debootstrap and kept in a cache folder outside the repository
(RNF_ANSIBLE_CACHE, default /var/cache/rnf-ansible-test), keyed by what went into it. Besides debootstrap's minimal
system it holds the Debian packages the roles and the Makefile install, read from the roles' defaults and the
Makefile: installing them takes most of the first build (minutes), while a converge that finds them installed takes
seconds, and the test stays within CI's time. The apt tasks still run and check every package.

Each test gets its own copy-on-write view of the cached root: an overlay (the cache as its read-only lower layer, an
upper layer in the test's temporary folder), mounted in a private mount namespace (`unshare --mount`) together with
/proc, /dev and the download caches, so that nothing is mounted on the host and nothing outlives a command. Package
managers in the root cannot start services (policy-rc.d), and nothing else can: systemd is not running in a chroot.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
ANSIBLE_DIR = REPO / "ansible"
SUITE = "bookworm"
CACHE = Path(os.environ.get("RNF_ANSIBLE_CACHE", "/var/cache/rnf-ansible-test"))
# What a fresh Debian 12 server has besides debootstrap's minimal system: systemd, and Python for Ansible.
BASE_PACKAGES = ["systemd", "systemd-sysv", "udev", "python3", "python3-apt", "ca-certificates", "sudo"]
# The account group_vars/all of the example inventory puts into the USRP group (uhd_users).
LAB_USER = "lab"
# Certificate authorities the host trusts besides Debian's: where HTTPS goes through a proxy the host trusts (as on
# this project's machines), pip, uv and cargo in the root must trust it too.
HOST_LOCAL_CAS = Path("/usr/local/share/ca-certificates")
# Bumped when the way the root is built changes, so that an old cache is not reused.
ROOT_FORMAT = "1"


def debian_mirror() -> str:
    """The Debian mirror this machine's apt uses (RNF_DEBIAN_MIRROR overrides it)."""
    if os.environ.get("RNF_DEBIAN_MIRROR"):
        return os.environ["RNF_DEBIAN_MIRROR"].rstrip("/")
    sources = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for source in sources:
        if not source.is_file() or not source.name.endswith((".list", ".sources")):
            continue
        text = source.read_text()
        match = re.search(r"^URIs:\s*(\S+/debian)/?\s*$", text, re.MULTILINE) or re.search(
            r"^deb\s+(?:\[[^]]*\]\s+)?(\S+/debian)/?\s+\S+", text, re.MULTILINE
        )
        if match:
            return match[1]
    return "http://deb.debian.org/debian"


def makefile_apt_packages() -> list[str]:
    """APT_PACKAGES and RUST_APT_PACKAGES of the Makefile (`make setup` installs them in the root)."""
    text = (REPO / "Makefile").read_text().replace("\\\n", " ")
    packages: list[str] = []
    for name in ("APT_PACKAGES", "RUST_APT_PACKAGES"):
        match = re.search(rf"^{name}\s*:=\s*(.*)$", text, re.MULTILINE)
        assert match, f"Makefile: no {name}"
        packages += match[1].split()
    return packages


def role_packages() -> list[str]:
    """The packages the roles install with apt from the distribution (their defaults)."""
    packages: list[str] = []
    for role, variable in (("uhd", "uhd_packages"), ("srsran", "srsran_build_packages")):
        defaults = yaml.safe_load((ANSIBLE_DIR / "roles" / role / "defaults" / "main.yml").read_text())
        packages += defaults[variable]
    for tasks in (ANSIBLE_DIR / "roles").glob("*/tasks/*.yml"):
        for task in yaml.safe_load(tasks.read_text()) or []:
            apt = task.get("ansible.builtin.apt") if isinstance(task, dict) else None
            if apt and isinstance(apt.get("name"), list) and "{{" not in str(apt["name"]):
                packages += apt["name"]
    return packages


def seed_packages() -> list[str]:
    return sorted(set(role_packages() + makefile_apt_packages()))


def in_namespace(script: str, *args: str, check: bool = True, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Runs a bash script in a private mount namespace: whatever it mounts goes away with it."""
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "bash", "-euo", "pipefail", "-c", script, "bash", *args],
        check=check,
        text=True,
        **kwargs,  # type: ignore[arg-type]
    )


def _mount_basics(root: str) -> str:
    return (
        f"mount -t proc proc {root}/proc\n"
        f"mount --rbind /dev {root}/dev\n"
        f"mount --make-rslave {root}/dev\n"
        f"cp /etc/resolv.conf {root}/etc/resolv.conf\n"
    )


def build_root(target: Path, mirror: str, packages: Sequence[str]) -> dict[str, float]:
    """debootstrap into `target`, then install `packages`; returns how long each step took (s)."""
    timings: dict[str, float] = {}
    started = time.monotonic()
    subprocess.run(
        ["debootstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}", SUITE, str(target), mirror],
        check=True,
        capture_output=True,
        text=True,
    )
    timings["debootstrap"] = time.monotonic() - started
    security = mirror.rsplit("/debian", 1)[0] + "/debian-security"
    (target / "etc/apt/sources.list").write_text(
        f"deb {mirror} {SUITE} main\ndeb {mirror} {SUITE}-updates main\ndeb {security} {SUITE}-security main\n"
    )
    # No service starts from a package's scripts in the root (Debian's convention for chroots).
    policy = target / "usr/sbin/policy-rc.d"
    policy.write_text("#!/bin/sh\n# No service starts in this chroot.\nexit 101\n")
    policy.chmod(0o755)
    # dpkg's fsync per file only slows a throw-away root down.
    (target / "etc/dpkg/dpkg.cfg.d/unsafe-io").write_text("force-unsafe-io\n")
    started = time.monotonic()
    root = shlex.quote(str(target))
    in_namespace(
        _mount_basics(root)
        + f"chroot {root} useradd --create-home --shell /bin/bash {LAB_USER}\n"
        + f"chroot {root} apt-get update -qq\n"
        + f"DEBIAN_FRONTEND=noninteractive chroot {root} apt-get install -y -qq --no-install-recommends "
        + " ".join(shlex.quote(p) for p in packages)
        + " >/dev/null\n"
        + f"chroot {root} apt-get clean\n",
        capture_output=True,
    )
    timings["packages"] = time.monotonic() - started
    return timings


@dataclass(frozen=True)
class CachedRoot:
    path: Path
    built_now: dict[str, float]  # how long building it took in this session; empty when it came from the cache


@pytest.fixture(scope="session")
def debian_root() -> CachedRoot:
    """The cached Debian 12 root, built first if this machine has none for the current roles and Makefile."""
    if shutil.which("debootstrap") is None:
        pytest.fail("debootstrap is not installed (make setup installs it: APT_PACKAGES)")
    mirror = debian_mirror()
    packages = seed_packages()
    key = hashlib.sha256("\n".join([ROOT_FORMAT, SUITE, mirror, *BASE_PACKAGES, *packages]).encode()).hexdigest()
    entry = CACHE / f"{SUITE}-{key[:16]}"
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test run may be building the same root
        if (entry / "root").is_dir():
            return CachedRoot(entry / "root", {})
        building = CACHE / f"building-{os.getpid()}"
        shutil.rmtree(building, ignore_errors=True)
        building.mkdir()
        try:
            timings = build_root(building / "root", mirror, packages)
            building.rename(entry)
        except subprocess.CalledProcessError as error:
            raise RuntimeError(f"building the Debian root failed: {error.cmd}\n{error.stdout}{error.stderr}") from None
        finally:
            shutil.rmtree(building, ignore_errors=True)
        for stale in CACHE.glob(f"{SUITE}-*"):
            if stale != entry:
                shutil.rmtree(stale, ignore_errors=True)
        return CachedRoot(entry / "root", timings)


class Chroot:
    """A copy-on-write view of the cached root; `run` executes a command with it mounted at `self.root`."""

    def __init__(self, lower: Path, directory: Path) -> None:
        self.lower = lower
        self.upper = directory / "upper"
        self.work = directory / "work"
        self.root = directory / "root"
        for folder in (self.upper, self.work, self.root):
            folder.mkdir(parents=True)
        # Download caches of make setup inside the root (pip, uv, cargo), kept between runs like the root.
        self.caches = {
            CACHE / "downloads" / "pip": "root/.cache/pip",
            CACHE / "downloads" / "uv": "root/.cache/uv",
            CACHE / "downloads" / "cargo-registry": "root/.cargo/registry",
        }

    def _mounts(self) -> str:
        root = shlex.quote(str(self.root))
        script = (
            f"mount -t overlay overlay -o lowerdir={shlex.quote(str(self.lower))},"
            f"upperdir={shlex.quote(str(self.upper))},workdir={shlex.quote(str(self.work))} {root}\n"
        )
        script += _mount_basics(root)
        for cache, inside in self.caches.items():
            cache.mkdir(parents=True, exist_ok=True)
            script += f"mkdir -p {root}/{inside} && mount --bind {shlex.quote(str(cache))} {root}/{inside}\n"
        return script

    def trust_host_cas(self) -> None:
        """Adds the host's own certificate authorities to the root's (update-ca-certificates in the root)."""
        local = sorted(HOST_LOCAL_CAS.glob("*.crt")) if HOST_LOCAL_CAS.is_dir() else []
        if local:
            target = f"{self.root}{HOST_LOCAL_CAS}"
            self.run(["bash", "-c", f'cp "$@" {target}/ && chroot {self.root} update-ca-certificates >/dev/null', "cp",
                      *map(str, local)], capture_output=True)  # fmt: skip

    def run(self, argv: Sequence[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        """Runs argv on the host, in a mount namespace where the root is mounted (argv may chroot into it)."""
        return in_namespace(self._mounts() + 'exec "$@"', *argv, **kwargs)

    def path(self, inside: str) -> Path:
        """Where a file of the root is on the host between commands: the upper layer if it changed, else the lower."""
        relative = inside.lstrip("/")
        changed = self.upper / relative
        return changed if os.path.lexists(changed) else self.lower / relative


@pytest.fixture
def chroot(debian_root: CachedRoot, tmp_path: Path) -> Iterator[Chroot]:
    view = Chroot(debian_root.path, tmp_path / "chroot")
    view.trust_host_cas()
    yield view
    # The upper layer holds the project's installation (hundreds of MB): not worth keeping in pytest's tmp folders.
    shutil.rmtree(view.upper, ignore_errors=True)
    shutil.rmtree(view.work, ignore_errors=True)
