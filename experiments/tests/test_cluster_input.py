"""`rnf run --scheduler` and `rnf worker` on bad input: one line naming the address or option, exit 2, quickly; the
block plan that `--resume` relies on (stable ids, rotated order, paired folders); `rnf report --by host`."""

import json
import socket
import time
from pathlib import Path

import pytest
from rnf_cli.main import main
from rnf_experiments import blocks, cluster
from rnf_experiments.scenario import load_scenario
from rnf_foundation.errors import UserError

SCENARIOS = Path(__file__).parents[1] / "scenarios"
SWEEP = [
    "arms=[{name='cubic'}, {name='bbr', cc='bbr'}, {name='reno', cc='reno'}]",
    "repetitions=3",
    "sweep={parameter='delay', keys=['cell.ues.0.backhaul_delay_ms'], values=[5, 15]}",
]


def rnf(capsys, *args: str) -> tuple[int, list[str]]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    return exit_info.value.code, capsys.readouterr().err.splitlines()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_scheduler_is_one_line_naming_it_within_seconds(capsys):
    address = f"tcp://127.0.0.1:{closed_port()}"
    started = time.monotonic()
    code, err = rnf(capsys, "run", str(SCENARIOS / "proxy-smoke.toml"), "--scheduler", address)
    assert code == 2 and len(err) == 1 and address in err[0] and "cannot reach the scheduler" in err[0]
    assert time.monotonic() - started < cluster.CONNECT_S + 3
    started = time.monotonic()
    code, err = rnf(capsys, "worker", "--scheduler", address)
    assert code == 2 and len(err) == 1 and address in err[0] and "cannot reach the scheduler" in err[0]
    assert time.monotonic() - started < cluster.CONNECT_S + 3


@pytest.mark.parametrize("address", ["nonsense", "tcp://127.0.0.1", "tcp://127.0.0.1:99999", "udp://127.0.0.1:8786"])
@pytest.mark.parametrize("command", ["run", "worker"])
def test_a_malformed_scheduler_address_is_one_line(capsys, address, command):
    args = ["run", str(SCENARIOS / "proxy-smoke.toml")] if command == "run" else ["worker"]
    code, err = rnf(capsys, *args, "--scheduler", address)
    assert code == 2 and err == [f"Error: --scheduler {address!r}: not a scheduler address (e.g. tcp://127.0.0.1:8786 "
                                 "or tls://lab-head:8786)"]  # fmt: skip


@pytest.mark.parametrize("command", ["run", "worker"])
def test_a_non_loopback_scheduler_needs_tls_or_insecure(capsys, command):
    args = ["run", str(SCENARIOS / "proxy-smoke.toml")] if command == "run" else ["worker"]
    started = time.monotonic()
    code, err = rnf(capsys, *args, "--scheduler", "192.0.2.7:8786")
    assert code == 2 and len(err) == 1
    assert "tcp://192.0.2.7:8786: not a loopback address" in err[0] and "--insecure" in err[0]
    assert time.monotonic() - started < 2  # refused before any connection attempt
    code, err = rnf(capsys, *args, "--scheduler", "tls://192.0.2.7:8786")
    assert code == 2 and err == ["Error: --scheduler tls://192.0.2.7:8786: tls:// needs --tls-ca-file, --tls-cert "
                                 "and --tls-key"]  # fmt: skip


def test_check_address():
    none = cluster.Tls()
    assert cluster.check_address("127.0.0.1:8786", none, False) == "tcp://127.0.0.1:8786"
    assert cluster.check_address("tcp://localhost:1", none, False) == "tcp://localhost:1"
    assert cluster.check_address("tcp://[::1]:8786", none, False) == "tcp://[::1]:8786"
    assert cluster.check_address("tcp://10.0.0.1:8786", none, True) == "tcp://10.0.0.1:8786"
    with pytest.raises(UserError, match="not a loopback address"):
        cluster.check_address("tcp://lab-head:8786", none, False)
    certs = cluster.Tls(Path("ca.pem"), Path("node.pem"), Path("node.key"))
    assert cluster.check_address("tls://lab-head:8786", certs, False) == "tls://lab-head:8786"
    with pytest.raises(UserError, match=r"must be tls://127\.0\.0\.1:8786"):
        cluster.check_address("tcp://127.0.0.1:8786", certs, False)


def test_tls_files_are_checked(tmp_path):
    with pytest.raises(UserError, match="--tls-key: missing"):
        cluster.Tls(tmp_path / "ca.pem", tmp_path / "node.pem").security("client")
    with pytest.raises(UserError, match=r"--tls-ca-file .*ca.pem: no such file"):
        cluster.Tls(tmp_path / "ca.pem", tmp_path / "node.pem", tmp_path / "node.key").security("client")


def test_cluster_options_need_a_scheduler(capsys, tmp_path):
    code, err = rnf(capsys, "run", str(SCENARIOS / "proxy-smoke.toml"), "--insecure")
    assert code == 2 and err == ["Error: --insecure needs --scheduler"]
    code, err = rnf(capsys, "run", "--resume", str(tmp_path))
    assert code == 2 and err == [f"Error: --resume {tmp_path}: no scheduler recorded in its metadata.json; give "
                                 "--scheduler ADDR"]  # fmt: skip
    code, err = rnf(capsys, "run")
    assert code == 2 and err == ["Error: Missing argument 'SCENARIO_FILE'."]


def test_resume_needs_a_results_folder_and_no_scenario(capsys, tmp_path):
    address = f"tcp://127.0.0.1:{closed_port()}"
    code, err = rnf(capsys, "run", "--resume", str(tmp_path), "--scheduler", address)
    assert code == 2 and err == [f"Error: --resume {tmp_path}: not a results folder (no metadata.json)"]
    code, err = rnf(
        capsys, "run", str(SCENARIOS / "proxy-smoke.toml"), "--resume", str(tmp_path), "--scheduler", address
    )
    assert code == 2 and err == ["Error: --resume RESULTS takes the scenario from RESULTS/metadata.json: no "
                                 "SCENARIO_FILE or --set"]  # fmt: skip
    (tmp_path / "metadata.json").write_text(json.dumps({"scenario": "x", "scenario_data": {"name": "x"}}))
    code, err = rnf(capsys, "run", "--resume", str(tmp_path), "--scheduler", address)
    assert code == 2 and err[0].startswith(f"Error: {tmp_path / 'metadata.json'}: ")  # a line per problem
    assert f"{tmp_path / 'metadata.json'}: duration_s: Field required" in "\n".join(err)


@pytest.mark.parametrize(
    ("text", "message"),
    [("usrp", "'usrp' is not NAME=AMOUNT"), ("usrp=0", "'usrp=0' is not"), ("block=1", "'block' is rnf's own")],
)
def test_bad_worker_resources(capsys, text, message):
    code, err = rnf(capsys, "worker", "--scheduler", "tcp://127.0.0.1:1", "--resources", text)
    assert code == 2 and len(err) == 1 and message in err[0]


def test_worker_resources():
    assert cluster.parse_resources("usrp=1, gpu=0.5 x2=3") == {"usrp": 1.0, "gpu": 0.5, "x2": 3.0}
    assert cluster.parse_resources(None) == {}


def test_execution_require_is_validated():
    scenario, _ = load_scenario(SCENARIOS / "proxy-smoke.toml", ["execution.require.usrp=1"])
    assert scenario.execution.require == {"usrp": 1.0}
    with pytest.raises(UserError, match=r"execution\.require\.usrp: Input should be greater than 0"):
        load_scenario(SCENARIOS / "proxy-smoke.toml", ["execution.require.usrp=0"])
    with pytest.raises(UserError, match=r"execution\.need: Extra inputs are not permitted"):
        load_scenario(SCENARIOS / "proxy-smoke.toml", ["execution.need=1"])


def test_blocks_are_paired_rotated_and_stable():
    scenario, raw = load_scenario(SCENARIOS / "proxy-smoke.toml", SWEEP)
    planned = blocks.plan(scenario, raw, "test")
    assert len(planned) == 2 * 3 and len({b.id for b in planned}) == 6
    orders = [b.arms for b in planned if b.variant.index == 0]
    assert orders == [("cubic", "bbr", "reno"), ("bbr", "reno", "cubic"), ("reno", "cubic", "bbr")]
    assert planned[4].folders == ("01-delay=15-1-bbr", "01-delay=15-1-reno", "01-delay=15-1-cubic")
    again, raw_again = load_scenario(SCENARIOS / "proxy-smoke.toml", SWEEP)
    assert [b.id for b in blocks.plan(again, raw_again, "test")] == [b.id for b in planned]
    changed, raw_changed = load_scenario(SCENARIOS / "proxy-smoke.toml", [*SWEEP, "seed=12"])
    assert not {b.id for b in blocks.plan(changed, raw_changed, "test")} & {b.id for b in planned}


def test_a_block_is_complete_only_with_every_run_marked(tmp_path):
    scenario, raw = load_scenario(SCENARIOS / "proxy-smoke.toml", SWEEP)
    block = blocks.plan(scenario, raw, "test")[0]
    for folder in block.folders:
        (tmp_path / "runs" / folder).mkdir(parents=True)
        (tmp_path / "runs" / folder / "run.json").write_text('{"complete": true}')
    assert block.complete(tmp_path)
    (tmp_path / "runs" / block.folders[-1] / "run.json").write_text('{"stopped": "SIGTERM"}')
    assert not block.complete(tmp_path)


def test_a_blocks_result_stays_in_its_run_folders(tmp_path):
    scenario, raw = load_scenario(SCENARIOS / "proxy-smoke.toml", SWEEP)
    block = blocks.plan(scenario, raw, "test")[0]
    (tmp_path / "runs").mkdir()
    for bad in ("../../etc/passwd", "/etc/passwd", "other-run/run.json"):
        with pytest.raises(ValueError, match="outside its run folders"):
            cluster.write_block(tmp_path, block, {bad: b"x"})
    files = {f"{folder}/run.json": b'{"complete": true}' for folder in block.folders}
    cluster.write_block(tmp_path, block, files)
    assert block.complete(tmp_path) and not (tmp_path / cluster.INCOMING / block.id).exists()


def test_two_workers_never_share_a_blocks_prefix():
    one = blocks.node_settings("p00-r0-abc", "tcp://127.0.0.1:4001")[0]
    other = blocks.node_settings("p00-r0-abc", "tcp://127.0.0.1:4002")[0]
    assert one != other and one.startswith("k") and len(one) == 8
