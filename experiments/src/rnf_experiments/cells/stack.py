"""srsepc, the patched srsenb and N srsue on srsRAN's ZeroMQ radio, as processes in network namespaces.

srsepc, srsenb and every srsue run in one namespace, the core: S1 on its loopback (through the SCTP-over-UDP
shim where the kernel has no SCTP), the ZeroMQ radio's sockets, and srsepc's SGi interface `srs_spgw_sgi`
(172.16.0.1). Each srsue puts its TUN (`tun_srsue`, 172.16.0.2, .3, ...) into a namespace of its own. The radio is
either direct (srsenb wired to one srsue) or a bridge (`rnf bridge run`) that the caller starts between the UEs'
start and their attach. Used by `rnf run`'s srsRAN cells (`cells/srsran.py`) and by the integration tests.

The stack runs without real-time scheduling. srsenb and srsue ask for SCHED_FIFO (priorities 94-96) for their PHY
workers and stack thread, as a radio's deadlines need; the ZeroMQ radio has none (srsenb and srsue pace each other
through its sockets), and on a small host the two stacks' FIFO threads, busy most of each TTI, took every core
for up to 190 ms at a time: the proxy in the runner's process made no decision for 40-190 ms 9-10 times per 20 s
arm through the bridge (none on the virtual cell), and the bridge's flowgraph starved the same way. So the
processes start without CAP_SYS_NICE (`setpriv`), their requests for FIFO fail with EPERM and srsRAN creates the
threads with normal priority (`threads_new_rt_cpu`'s fallback, which prints a warning in enb.out and ue*.out).

A build is a srsRAN_4G tree built with ZeroMQ (`-DENABLE_ZEROMQ=ON`) with the enb-patches series applied;
`find_build` says why one cannot be used.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SGI_IP = "172.16.0.1"
SGI_IFNAME = "srs_spgw_sgi"
UE_IFNAME = "tun_srsue"
DRB_LCID = 3
# srsRAN's sample rate per cell size; base_srate equal to it cuts CPU and ZeroMQ traffic (the shim's README).
SAMPLE_RATE = {6: 1.92e6, 15: 3.84e6, 25: 5.76e6, 50: 11.52e6, 100: 23.04e6}
REPOSITORY = Path(__file__).resolve().parents[4]
SHIM_SOURCE = REPOSITORY.parent / "shared" / "tools" / "sctp-udp-shim" / "sctpshim.c"
ENB_RADIO = "tcp://127.0.0.1:2000", "tcp://127.0.0.1:2001"  # srsenb's tx_port and rx_port on the direct radio
ATTACH_TIMEOUT_S = 120.0
WITHOUT_REAL_TIME = ["setpriv", "--bounding-set", "-sys_nice", "--inh-caps", "-sys_nice", "--"]  # see above


class StackError(RuntimeError):
    """A process of the stack failed or did not reach its next state in time; the message quotes its output."""


def ue_ip(index: int) -> str:
    """The static address srsepc gives the index-th UE (0-based), as the virtual cell numbers them."""
    return f"172.16.0.{index + 2}"


def imsi(index: int) -> str:
    return f"00101012345678{index}"


@dataclass(frozen=True)
class SrsranBuild:
    """Binaries of a patched build, and the source tree its example configurations come from."""

    build: Path
    source: Path

    @property
    def srsenb(self) -> Path:
        return self.build / "srsenb" / "src" / "srsenb"

    @property
    def srsue(self) -> Path:
        return self.build / "srsue" / "src" / "srsue"

    @property
    def srsepc(self) -> Path:
        return self.build / "srsepc" / "src" / "srsepc"


def find_build(value: str | None) -> SrsranBuild | str:
    """The build at `value` (SRSRAN_BUILD), or why it cannot run the stack."""
    if not value:
        return "SRSRAN_BUILD is not set (a srsRAN_4G build with the enb-patches series applied)"
    build = Path(value)
    cache = build / "CMakeCache.txt"
    if not cache.is_file():
        return f"SRSRAN_BUILD={build}: no CMakeCache.txt, not a cmake build tree"
    match = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", cache.read_text(), re.MULTILINE)
    if match is None:
        return f"{cache}: no CMAKE_HOME_DIRECTORY"
    found = SrsranBuild(build=build, source=Path(match[1]))
    for binary in (found.srsenb, found.srsue, found.srsepc):
        if not os.access(binary, os.X_OK):
            return f"SRSRAN_BUILD={build}: {binary} is not built (make srsenb srsue srsepc)"
    help_text = subprocess.run([str(found.srsenb), "--help"], capture_output=True, text=True, timeout=30).stdout
    if "telemetry.enable" not in help_text:
        return f"SRSRAN_BUILD={build}: its srsenb has no [telemetry] options (the enb-patches series is not applied)"
    return found


def kernel_has_sctp() -> bool:
    try:
        socket.socket(socket.AF_INET, socket.SOCK_SEQPACKET, socket.IPPROTO_SCTP).close()
    except OSError as error:
        if error.errno in (errno.EPROTONOSUPPORT, errno.ESOCKTNOSUPPORT, errno.EAFNOSUPPORT):
            return False
        raise
    return True


def sctp_preload(shim: str | None, workdir: Path) -> str | None:
    """The LD_PRELOAD srsepc and srsenb need for S1: None where the kernel has SCTP; else `shim` (SCTPSHIM), or the
    shim built into `workdir` from ../shared/tools/sctp-udp-shim/ next to the repository."""
    if kernel_has_sctp():
        return None
    if shim:
        if not Path(shim).is_file():
            raise StackError(f"SCTPSHIM={shim}: no such file")
        return shim
    if not SHIM_SOURCE.is_file():
        raise StackError(f"the kernel has no SCTP, SCTPSHIM is not set and {SHIM_SOURCE} does not exist")
    built = workdir / "libsctpshim.so"
    command = ["gcc", "-O2", "-Wall", "-fPIC", "-shared", "-o", str(built), str(SHIM_SOURCE), "-ldl", "-lpthread"]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise StackError(f"building the SCTP shim failed: {result.stderr.strip()}")
    return str(built)


def wait_for(path: Path, pattern: str, timeout_s: float, process: subprocess.Popen[bytes]) -> re.Match[str]:
    """The first match of `pattern` in the file `process` writes, or StackError when it exits or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = path.read_text(errors="replace") if path.exists() else ""
        match = re.search(pattern, text)
        if match:
            return match
        if process.poll() is not None:
            raise StackError(f"{path.name}: exited with {process.returncode} before '{pattern}':\n{text[-3000:]}")
        time.sleep(0.2)
    raise StackError(f"{path.name}: no '{pattern}' after {timeout_s} s:\n{path.read_text(errors='replace')[-3000:]}")


@dataclass(frozen=True)
class Radio:
    """The ZeroMQ radio's `device_args` of srsenb and of each srsue; `direct()` wires srsenb to one srsue."""

    enb: str
    ues: tuple[str, ...]

    @classmethod
    def direct(cls, n_prb: int) -> Radio:
        tx, rx = ENB_RADIO
        rate = f"base_srate={SAMPLE_RATE[n_prb]:.0f}"
        return cls(
            f"fail_on_disconnect=true,tx_port={tx},rx_port={rx},id=enb,{rate}",
            (f"tx_port={rx},rx_port={tx},id=ue,{rate}",),
        )


@dataclass(frozen=True)
class StackConfig:
    """One stack: where it runs, the cell, the default bearer's QCI (9: RLC AM, 7: RLC UM) and the telemetry
    (None: the exporter off)."""

    build: SrsranBuild
    workdir: Path
    core_ns: str
    ue_namespaces: tuple[str, ...]
    radio: Radio
    preload: str | None
    n_prb: int = 25
    qci: int = 9
    telemetry_endpoint: str | None = "tcp://127.0.0.1:5555"
    telemetry_period_ms: int = 10

    def __post_init__(self) -> None:
        if len(self.radio.ues) != len(self.ue_namespaces):
            raise ValueError(f"{len(self.ue_namespaces)} UE namespaces but radio arguments for {len(self.radio.ues)}")


def write_configs(config: StackConfig) -> None:
    """enb.conf (with its sib/rr/rb files), one ue<N>.conf per UE, epc.conf and user_db.csv in the working folder."""
    w = config.workdir
    for name in ("rr", "rb"):
        shutil.copy(config.build.source / "srsenb" / f"{name}.conf.example", w / f"{name}.conf")
    sib = (config.build.source / "srsenb" / "sib.conf.example").read_text()
    if config.n_prb == 6:  # srsenb: "prach=(4, 10) does not fit into the eNB PRBs=(0, 6)", and no UE attaches
        sib = re.sub(r"prach_freq_offset = \d+;", "prach_freq_offset = 0;", sib)
    (w / "sib.conf").write_text(sib)
    telemetry = (
        f"enable = true\nzmq_endpoint = {config.telemetry_endpoint}\nperiod_ms = {config.telemetry_period_ms}\n"
        if config.telemetry_endpoint is not None
        else "enable = false\n"
    )
    (w / "enb.conf").write_text(
        f"""[enb]
enb_id = 0x19B
mcc = 001
mnc = 01
mme_addr = 127.0.1.100
gtp_bind_addr = 127.0.1.1
s1c_bind_addr = 127.0.1.1
s1c_bind_port = 0
n_prb = {config.n_prb}

[enb_files]
sib_config = {w / "sib.conf"}
rr_config = {w / "rr.conf"}
rb_config = {w / "rb.conf"}

[rf]
device_name = zmq
device_args = {config.radio.enb}
tx_gain = 80
rx_gain = 40

[log]
all_level = warning
filename = {w / "enb.log"}

[telemetry]
{telemetry}
[expert]
# keep each UE connected (and its RNTI) through a run; srsRAN's default releases it after 30 s idle
rrc_inactivity_timer = 3600000
"""
    )
    for index, (namespace, args) in enumerate(zip(config.ue_namespaces, config.radio.ues, strict=True)):
        (w / f"ue{index + 1}.conf").write_text(
            f"""[rf]
device_name = zmq
device_args = {args}
tx_gain = 80
rx_gain = 40

[rat.eutra]
dl_earfcn = 3350
nof_carriers = 1

[log]
all_level = warning
filename = {w / f"ue{index + 1}.log"}

[usim]
mode = soft
algo = milenage
opc = 63BFA50EE6523365FF14C1F45F88737D
k = 00112233445566778899aabbccddeeff
imsi = {imsi(index)}
imei = 35349006987331{index}

[gw]
netns = {namespace}
ip_devname = {UE_IFNAME}
"""
        )
    (w / "epc.conf").write_text(
        f"""[mme]
mme_code = 0x1a
mme_group = 0x0001
tac = 0x0007
mcc = 001
mnc = 01
mme_bind_addr = 127.0.1.100
apn = srsapn
dns_addr = 127.0.0.1
encryption_algo = EEA0
integrity_algo = EIA1
paging_timer = 2

[hss]
db_file = {w / "user_db.csv"}

[spgw]
gtpu_bind_addr = 127.0.1.100
sgi_if_addr = {SGI_IP}
sgi_if_name = {SGI_IFNAME}
max_paging_queue = 100

[log]
all_level = warning
filename = {w / "epc.log"}
"""
    )
    # The QCI of each UE's default bearer (rb.conf maps 9 to RLC AM, 7 to RLC UM), and a static UE address.
    (w / "user_db.csv").write_text(
        "".join(
            f"ue{i + 1},mil,{imsi(i)},00112233445566778899aabbccddeeff,opc,"
            f"63bfa50ee6523365ff14c1f45f88737d,8000,000000001234,{config.qci},{ue_ip(i)}\n"
            for i in range(len(config.ue_namespaces))
        )
    )


class SrsStack:
    """The processes of one stack, from `start()` until `stop()`; the namespaces are created and removed with them."""

    def __init__(self, config: StackConfig) -> None:
        self.config = config
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.rntis: list[int] = []

    def _start(self, name: str, argv: list[str], preload: bool) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        if preload and self.config.preload:
            env["LD_PRELOAD"] = self.config.preload
        with (self.config.workdir / f"{name}.out").open("wb") as out:
            process = subprocess.Popen(
                ["ip", "netns", "exec", self.config.core_ns, *WITHOUT_REAL_TIME, *argv],
                cwd=self.config.workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.processes[name] = process
        return process

    def start(self, before_attach: Callable[[], None] | None = None) -> None:
        """srsepc, srsenb, then every srsue; `before_attach` (the bridge) runs once they all wait for samples.
        Returns when every UE has attached and has a default route through its TUN."""
        c, w = self.config, self.config.workdir
        write_configs(c)
        for ns in (c.core_ns, *c.ue_namespaces):
            subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True)
            subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        epc = self._start("epc", [str(c.build.srsepc), str(w / "epc.conf")], preload=True)
        wait_for(w / "epc.out", r"SP-GW Initialized", 30, epc)
        enb = self._start("enb", [str(c.build.srsenb), str(w / "enb.conf")], preload=True)
        wait_for(w / "enb.out", r"eNodeB started", 60, enb)
        ues = [
            self._start(f"ue{i + 1}", [str(c.build.srsue), str(w / f"ue{i + 1}.conf")], preload=False)
            for i in range(len(c.ue_namespaces))
        ]
        if before_attach is not None:
            for index, ue in enumerate(ues):
                wait_for(w / f"ue{index + 1}.out", r"Attaching UE", 30, ue)
            before_attach()
        for index, ue in enumerate(ues):
            pattern = r"Network attach successful\. IP: " + re.escape(ue_ip(index))
            wait_for(w / f"ue{index + 1}.out", pattern, ATTACH_TIMEOUT_S, ue)
            route = ["ip", "-n", c.ue_namespaces[index], "route", "replace", "default", "dev", UE_IFNAME]
            subprocess.run(route, check=True, capture_output=True)
        deadline = time.monotonic() + 30
        while len(self.rntis) < len(ues):
            found = re.findall(r"User (0x[0-9a-f]+) connected", (w / "enb.out").read_text(errors="replace"))
            self.rntis = [int(rnti, 16) for rnti in found]
            if time.monotonic() > deadline:
                raise StackError(f"enb.out: {len(self.rntis)} of {len(ues)} UEs connected after 30 s")
            time.sleep(0.2)

    def stop(self) -> None:
        """SIGINT to every process (UEs first), SIGKILL after 15 s; then the namespaces go."""
        names = [name for name in self.processes if name.startswith("ue")] + ["enb", "epc"]
        for name in names:
            process = self.processes.get(name)
            if process is None or process.poll() is not None:
                continue
            process.send_signal(signal.SIGINT)
        for name in names:
            process = self.processes.get(name)
            if process is None:
                continue
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        for ns in (*self.config.ue_namespaces, self.config.core_ns):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def __enter__(self) -> SrsStack:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def enb_pid(self) -> int:
        """srsenb's own pid (`ip netns exec` and `setpriv` exec it, so the Popen pid is srsenb's)."""
        return self.processes["enb"].pid

    def ue_rx_bytes(self, index: int = 0) -> int:
        """The UE kernel's count of bytes received on its TUN (IP packets, headers included)."""
        out = subprocess.run(
            ["ip", "-n", self.config.ue_namespaces[index], "-s", "-j", "link", "show", "dev", UE_IFNAME],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return int(json.loads(out)[0]["stats64"]["rx"]["bytes"])

    def ping_ue(self, index: int = 0, count: int = 3) -> None:
        """Pings the UE from the core; the eNB learns the UE's address from its first downlink packets."""
        command = ["ip", "netns", "exec", self.config.core_ns, "ping", "-c", str(count), "-i", "0.3", "-W", "2"]
        result = subprocess.run([*command, ue_ip(index)], capture_output=True, text=True)
        if result.returncode != 0:
            raise StackError(f"ping {ue_ip(index)} from {self.config.core_ns} failed:\n{result.stdout}{result.stderr}")
