"""site.yml converged into a real Debian 12 root twice: the second run changes nothing, and the result is checked.

The root (conftest.py) is reached with Ansible's `community.general.chroot` connection, the way a lab PC is reached
over SSH: the controller runs here, every module runs inside the root with its own Python. The inventory is the
example one (its group_vars and its Vault, decrypted with the example password) with the root as the single host in
`enb`, `core` and `monitoring`, the usual one-PC lab.

Skipped tags (ansible/README.md):
- `network`: needs networks other than Debian's mirror, PyPI and crates.io: srsRAN's upstream clone and the source
  build that follows it (run separately against a local srsRAN_4G, see the README), the vendors' apt repositories
  of InfluxDB and Grafana, Ettus's PPA and FPGA images, rustup;
- `hardware`: talks to USRPs (uhd_find_devices, uhd_usrp_probe).

Everything else runs: the Debian packages, the project installed by `make setup` (uv, .venv, the Rust datapath),
the rendered configurations, the systemd units (enabled; nothing starts in a chroot).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml
from rnf_proxy.config import load as load_proxy_config
from rnf_proxy.interception import Interception

if TYPE_CHECKING:
    from conftest import CachedRoot, Chroot

ANSIBLE_DIR = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
EXAMPLE_INVENTORY = ANSIBLE_DIR / "inventories" / "example"
EXAMPLE_VAULT_PASSWORD = "rnf-example-vault"
SKIP_TAGS = "network,hardware"
RECAP = re.compile(r"^(?P<host>\S+)\s*:\s*ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+unreachable=(?P<unreachable>\d+)"
                   r"\s+failed=(?P<failed>\d+)", re.MULTILINE)  # fmt: skip


def write_inventory(directory: Path, chroot: Chroot) -> Path:
    """The example inventory's variables (and Vault) with the chroot as its one host."""
    inventory = directory / "inventory"
    shutil.copytree(EXAMPLE_INVENTORY / "group_vars", inventory / "group_vars")
    host = {
        str(chroot.root): {
            "ansible_connection": "community.general.chroot",
            "ansible_python_interpreter": "/usr/bin/python3",
        }
    }
    hosts = {"all": {"children": {group: {"hosts": host} for group in ("enb", "core", "monitoring", "workers")}}}
    (inventory / "hosts.yml").write_text(yaml.safe_dump(hosts))
    return inventory


def ansible_env(directory: Path) -> dict[str, str]:
    password = directory / "vault-password"
    password.write_text(EXAMPLE_VAULT_PASSWORD + "\n")
    return {
        **os.environ,
        "PATH": f"{BIN}:{os.environ.get('PATH', '')}",
        "ANSIBLE_CONFIG": str(ANSIBLE_DIR / "ansible.cfg"),
        "ANSIBLE_VAULT_PASSWORD_FILE": str(password),
        "ANSIBLE_HOME": str(directory / "ansible-home"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
    }


def playbook(chroot: Chroot, directory: Path, name: str, log: str, *extra: str) -> tuple[dict[str, int], str]:
    """Runs a playbook against the chroot; its recap counts and its output (also written to `<log>.log`)."""
    (directory / log).mkdir()
    argv = [str(BIN / "ansible-playbook"), "-i", str(write_inventory(directory / log, chroot)), name, *extra]
    started = time.monotonic()
    result = chroot.run(
        ["bash", "-c", 'cd "$1" && shift && exec "$@"', "bash", str(ANSIBLE_DIR), *argv],
        env=ansible_env(directory / log),
        capture_output=True,
        check=False,
        timeout=1800,
    )
    output = result.stdout + result.stderr
    (directory / f"{log}.log").write_text(output)
    print(f"{log}: {time.monotonic() - started:.0f} s, exit code {result.returncode}")
    recaps = [match.groupdict() for match in RECAP.finditer(output)]
    assert recaps, f"{log}: no PLAY RECAP (exit code {result.returncode}):\n{output[-6000:]}"
    counts = {key: int(value) for key, value in recaps[-1].items() if key != "host"}
    assert result.returncode == 0 and counts["failed"] == 0 and counts["unreachable"] == 0, (
        f"{log}: exit code {result.returncode}, {counts}:\n{output[-8000:]}"
    )
    print(f"{log}: {RECAP.findall(output) and list(RECAP.finditer(output))[-1][0]}")
    return counts, output


def changed_tasks(output: str) -> list[str]:
    """The tasks that reported a change, from ansible-playbook's default output."""
    tasks: list[str] = []
    current = ""
    for line in output.splitlines():
        if line.startswith(("TASK [", "RUNNING HANDLER [")):
            current = line.split("[", 1)[1].rsplit("]", 1)[0]
        elif line.startswith("changed:") and current not in tasks:
            tasks.append(current)
    return tasks


def in_root(chroot: Chroot, *argv: str) -> subprocess.CompletedProcess[str]:
    return chroot.run(["chroot", str(chroot.root), *argv], capture_output=True, check=False, timeout=120)


def processes_in(root: Path) -> list[str]:
    """Processes whose root directory is `root` (something the converge left running in the chroot)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if os.readlink(proc / "root") == str(root):
                command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                found.append(f"{proc.name} {command}")
        except OSError:
            continue
    return found


def unit_commands(unit: str, key: str) -> list[list[str]]:
    """The command lines of a unit file's ExecStart= or ExecStop= lines; a leading '-' (ignore failure) kept."""
    return [shlex.split(line.split("=", 1)[1]) for line in unit.splitlines() if line.startswith(f"{key}=")]


@pytest.mark.root
@pytest.mark.timeout(3600)
def test_site_converges_into_debian_12_and_a_second_run_changes_nothing(
    debian_root: CachedRoot, chroot: Chroot, tmp_path: Path
) -> None:
    for step, seconds in debian_root.built_now.items():
        print(f"Debian root built now, {step}: {seconds:.0f} s")
    worker_vars = worker_tls(tmp_path)
    first, _ = playbook(chroot, tmp_path, "site.yml", "converge-1", "--skip-tags", SKIP_TAGS, "-e", worker_vars)
    assert first["changed"] > 0, "the first converge into a fresh root changed nothing"
    second, second_output = playbook(
        chroot, tmp_path, "site.yml", "converge-2", "--skip-tags", SKIP_TAGS, "-e", worker_vars
    )
    assert second["changed"] == 0, f"the second converge changed: {changed_tasks(second_output)}"

    # Nothing runs in the root: units are enabled only, and no package started a daemon.
    assert processes_in(chroot.root) == []
    units = ["srsepc", "srsenb", "rnf-interception", "rnf-proxy", "rnf-cpu-governor", "rnf-worker"]
    enabled = in_root(chroot, "systemctl", "is-enabled", *[f"{unit}.service" for unit in units])
    assert enabled.stdout.split() == ["enabled"] * len(units), enabled.stdout + enabled.stderr
    # srsepc and srsenb are not built here (tag network), and systemd-analyze wants the binaries: the others.
    verified = [f"/etc/systemd/system/{unit}.service" for unit in units if not unit.startswith("srs")]
    verify = in_root(chroot, "systemd-analyze", "verify", *verified)
    assert verify.returncode == 0 and verify.stderr == "", verify.stdout + verify.stderr

    # The project, installed by its own Makefile inside the root, runs there.
    assert in_root(chroot, "/opt/rnf/.venv/bin/rnf", "proxy", "--help").returncode == 0
    assert os.access(chroot.path("/opt/rnf/virtual-cell/datapath/target/release/rnf-cell-dp"), os.X_OK)
    deployed = chroot.path("/opt/rnf/.rnf-tree").read_text().strip()
    head_tree = subprocess.run(["git", "-C", str(ANSIBLE_DIR), "rev-parse", "HEAD^{tree}"], capture_output=True,
                               text=True, check=True).stdout.strip()  # fmt: skip
    assert deployed == head_tree

    check_srsran_configuration(chroot)
    check_worker(chroot)
    check_interception(chroot, tmp_path)
    check_uhd_host_settings(chroot)
    check_monitoring_files(chroot)

    report = preflight_report(chroot, tmp_path)
    assert any(line.startswith("OK  UHD: ") for line in report), report
    assert any(re.match(r"(OK |BAD) CPU: \d+ cores, \d+ % idle", line) for line in report), report
    assert "--  USB: no USRP on USB (fine for a network-attached USRP)" in report, report


WORKER_SCHEDULER = "tls://127.0.0.1:9"  # nothing listens on the discard port


def worker_tls(directory: Path) -> str:
    """A CA and a worker certificate made with openssl, as role rnf_worker's extra variables (a JSON string)."""
    tls = directory / "tls"
    tls.mkdir()

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=tls)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=rnf lab CA",
            "-keyout", "ca.key", "-out", "ca.pem")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=lab-pc", "-keyout", "worker.key",
            "-out", "worker.csr")  # fmt: skip
    openssl("x509", "-req", "-in", "worker.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
            "-out", "worker.pem")  # fmt: skip
    return json.dumps(
        {
            "rnf_worker_scheduler": WORKER_SCHEDULER,
            "rnf_worker_tls_ca_file": str(tls / "ca.pem"),
            "rnf_worker_tls_cert_file": str(tls / "worker.pem"),
            "rnf_worker_tls_key_file": str(tls / "worker.key"),
        }
    )


def check_worker(chroot: Chroot) -> None:
    """The worker's unit runs `rnf worker` with the node's USRP as a resource and the certificates; its command,
    run in the root, loads them and reports the unreachable scheduler in one line."""
    key = chroot.path("/etc/rnf/tls/worker.key")
    assert (key.stat().st_mode & 0o777) == 0o600 and key.stat().st_uid == 0
    unit = chroot.path("/etc/systemd/system/rnf-worker.service").read_text()
    (command,) = unit_commands(unit, "ExecStart")
    assert command == [
        "/opt/rnf/.venv/bin/rnf", "worker", "--scheduler", WORKER_SCHEDULER, "--name", str(chroot.root),
        "--resources", "usrp=1", "--tls-ca-file", "/etc/rnf/tls/ca.pem", "--tls-cert", "/etc/rnf/tls/worker.pem",
        "--tls-key", "/etc/rnf/tls/worker.key",
    ]  # fmt: skip
    result = in_root(chroot, *command)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.strip() == f"Error: --scheduler {WORKER_SCHEDULER}: cannot reach the scheduler " + (
        "(Worker start timed out after 3s.)"
    ), result.stderr


def check_srsran_configuration(chroot: Chroot) -> None:
    enb = chroot.path("/etc/srsran/enb.conf").read_text()
    for line in ("mme_addr = 127.0.1.100", "s1c_bind_addr = 127.0.1.1", "n_prb = 25", "device_name = uhd",
                 "device_args = type=b200,clock=internal", "rr_config = /etc/srsran/rr.conf"):  # fmt: skip
        assert f"\n{line}\n" in enb, line
    telemetry = enb.split("[telemetry]", 1)[1].split("[", 1)[0]
    assert "enable = true" in telemetry and "zmq_endpoint = tcp://127.0.0.1:5555" in telemetry, telemetry
    rr = chroot.path("/etc/srsran/rr.conf").read_text()
    assert "dl_earfcn = 3350;" in rr and "pci = 1;" in rr
    assert "root_sequence_index = 128;" in chroot.path("/etc/srsran/sib.conf").read_text()
    assert "discard_timer = 150;" in chroot.path("/etc/srsran/rb.conf").read_text()
    epc = chroot.path("/etc/srsran/epc.conf").read_text()
    assert "mme_bind_addr = 127.0.1.100" in epc and "db_file = /var/lib/srsran/user_db.csv" in epc
    # The subscriber comes from the Vault; the files hold SIM keys, so only root reads them. srsepc uses a copy,
    # which it writes back when it stops.
    user_db = chroot.path("/etc/srsran/user_db.csv")
    in_use = chroot.path("/var/lib/srsran/user_db.csv")
    assert (user_db.stat().st_mode & 0o777) == 0o600 and (in_use.stat().st_mode & 0o777) == 0o600
    assert (
        "ue1,mil,001010123456780,00112233445566778899aabbccddeeff,opc,63bfa50ee6523365ff14c1f45f88737d,8000,"
        "000000001234,9,172.16.0.2"
    ) in user_db.read_text().splitlines()
    assert in_use.read_text() == user_db.read_text()
    srsenb_unit = chroot.path("/etc/systemd/system/srsenb.service").read_text()
    assert "ExecStart=/usr/local/bin/srsenb /etc/srsran/enb.conf" in srsenb_unit
    assert "After=network-online.target srsepc.service" in srsenb_unit


def check_interception(chroot: Chroot, tmp_path: Path) -> None:
    """The proxy's configuration loads with the project's own validator, the persistent ruleset is the proxy's, and
    the interception unit's commands, run for real in a network namespace, are idempotent and undone by its stop."""
    config = load_proxy_config(chroot.path("/etc/rnf/proxy.toml"))
    assert config.namespace is None and config.controller.kind == "smvs"
    nft = chroot.path("/etc/rnf/interception.nft").read_text()
    expected = Interception(None, config.listen_address, tuple(config.ue_networks), tuple(config.ports)).ruleset()
    assert nft.endswith(expected), f"interception.nft:\n{nft}\nthe proxy's ruleset:\n{expected}"
    # The unit's paths are the root's: rewrite /etc/rnf to the host's copy of the files.
    unit = chroot.path("/etc/systemd/system/rnf-interception.service").read_text()
    local_nft = tmp_path / "interception.nft"
    local_nft.write_text(nft)
    namespace = f"ans{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", namespace], check=True)
    try:
        run_unit_commands(unit, "ExecStart", namespace, local_nft)
        once = interception_state(namespace)
        assert "tproxy to 127.0.0.1:15001" in once[0] and "172.16.0.0/24" in once[0], once[0]
        assert once[1].count("fwmark 0x1 lookup 100") == 1, once[1]
        assert "local default dev lo" in once[2], once[2]
        run_unit_commands(unit, "ExecStart", namespace, local_nft)  # a restart: the same state, no duplicate rule
        assert interception_state(namespace) == once
        run_unit_commands(unit, "ExecStop", namespace, local_nft)
        after = interception_state(namespace)
        assert after[0] == "" and "fwmark 0x1" not in after[1] and after[2] == "", after
    finally:
        subprocess.run(["ip", "netns", "del", namespace], check=False)


def run_unit_commands(unit: str, key: str, namespace: str, nft_file: Path) -> None:
    """Runs a unit's ExecStart= or ExecStop= commands in a network namespace, as systemd would (a leading '-'
    ignores a failure), with the ruleset read from `nft_file`."""
    for argv in unit_commands(unit, key):
        ignore = argv[0].startswith("-")
        argv = [argv[0].lstrip("-"), *(str(nft_file) if a == "/etc/rnf/interception.nft" else a for a in argv[1:])]
        result = subprocess.run(["ip", "netns", "exec", namespace, *argv], capture_output=True, text=True)
        assert ignore or result.returncode == 0, f"{argv}: {result.stderr}"


def interception_state(namespace: str) -> tuple[str, str, str]:
    """The namespace's rnf_proxy table, policy rules and routing table 100."""

    def output(*argv: str) -> str:
        return subprocess.run(["ip", "netns", "exec", namespace, *argv], capture_output=True, text=True).stdout

    return (
        output("nft", "list", "table", "ip", "rnf_proxy"),
        output("ip", "rule"),
        output("ip", "route", "show", "table", "100"),
    )


def check_uhd_host_settings(chroot: Chroot) -> None:
    rules = chroot.path("/etc/udev/rules.d/60-rnf-usrp.rules").read_text()
    assert 'ATTRS{idVendor}=="2500", ATTRS{idProduct}=="0020", MODE:="0660", GROUP:="usrp"' in rules
    sysctl = chroot.path("/etc/sysctl.d/60-rnf-uhd.conf").read_text()
    assert "net.core.rmem_max = 33554432" in sysctl and "net.core.wmem_max = 33554432" in sysctl
    limits = chroot.path("/etc/security/limits.d/60-rnf-realtime.conf").read_text()
    assert re.search(r"^@usrp\s+-\s+rtprio\s+99$", limits, re.MULTILINE), limits
    groups = in_root(chroot, "id", "-nG", "lab").stdout.split()
    assert "usrp" in groups, groups


def check_monitoring_files(chroot: Chroot) -> None:
    grafana = ANSIBLE_DIR.parent / "grafana"
    copies = [
        ("provisioning/datasources/influxdb.yaml", "/etc/grafana/provisioning/datasources/rnf.yaml"),
        ("provisioning/dashboards/rnf.yaml", "/etc/grafana/provisioning/dashboards/rnf.yaml"),
    ]
    copies += [
        (f"dashboards/{p.name}", f"/var/lib/grafana/dashboards/rnf/{p.name}") for p in grafana.glob("dashboards/*")
    ]
    for source, inside in copies:
        assert chroot.path(inside).read_bytes() == (grafana / source).read_bytes(), inside
    environment = chroot.path("/etc/default/grafana-server")
    assert (environment.stat().st_mode & 0o777) == 0o600
    values = dict(line.split("=", 1) for line in environment.read_text().splitlines() if "=" in line)
    assert values["INFLUX_PASSWORD"] == "example-influx-rnf-2b91"  # from the Vault
    assert values["INFLUX_URL"] == "http://127.0.0.1:8086" and values["GF_SERVER_HTTP_ADDR"] == "127.0.0.1"
    assert values["RNF_GRAFANA_DASHBOARDS"] == "/var/lib/grafana/dashboards/rnf"
    influx = chroot.path("/etc/influxdb/influxdb.conf").read_text()
    assert 'bind-address = "127.0.0.1:8086"' in influx and "auth-enabled = true" in influx


def preflight_report(chroot: Chroot, tmp_path: Path) -> list[str]:
    _, output = playbook(chroot, tmp_path, "preflight.yml", "preflight", "--skip-tags", "hardware")
    block = output.split("TASK [Print the report]", 1)[1]
    report = [line.replace('\\"', '"') for line in re.findall(r'^\s+"((?:OK |BAD|--) .*)",?$', block, re.MULTILINE)]
    print("preflight report:\n  " + "\n  ".join(report))
    return report
