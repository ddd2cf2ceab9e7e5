"""The dashboards: committed JSON equal to the generator's, provisioning consistent with it, every panel's
InfluxQL answering with the series it is meant to show, from a short real run: the virtual cell and the split
proxy with its `smvs` and `rnf` controllers, which record the `controller` measurement themselves; and the
in-band and drop panels returning exactly the values of a hand-made series.
"""

import json
import re
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from rnf_monitoring import dashboards
from rnf_monitoring.client import InfluxClient
from rnf_monitoring.importer import time_ns
from rnf_monitoring.influx import Outcome

REPO = Path(__file__).resolve().parents[2]
GRAFANA = REPO / "grafana"
RNF = Path(sys.executable).parent / "rnf"
ARMS = {"smvs", "rnf"}


def committed() -> dict[str, dict]:
    return {name: json.loads((GRAFANA / "dashboards" / name).read_text()) for name in dashboards.DASHBOARDS}


def targets() -> list[tuple[str, str, dict]]:
    """(dashboard file, panel title, target) of every query of the committed dashboards."""
    return [
        (name, panel["title"], target)
        for name, board in committed().items()
        for panel in board["panels"]
        for target in panel["targets"]
    ]


@dataclass(frozen=True)
class Expect:
    """What a query must return: series of `measurement` grouped by exactly `tags`, each column with data."""

    measurement: str
    tags: tuple[str, ...]
    columns: tuple[str, ...]
    arms: frozenset[str] = frozenset(ARMS)
    unit_interval: bool = False  # every value a fraction in [0, 1]
    srsran_only: bool = False  # nothing on the virtual cell of the recorded run (a hand-made series checks it)


CONTROLLER_TAGS = ("arm", "controller", "ue")
SMVS_ONLY = frozenset({"smvs"})
RLC_DROPS = Expect("telemetry", ("arm", "ue"), ("dropped SDUs",))
EXPECTED = {
    ("cell-and-ue.json", "RLC queue, q0 and band: UE $ue", "A"): Expect("telemetry", ("arm", "ue"), ("queue",)),
    ("cell-and-ue.json", "RLC queue, q0 and band: UE $ue", "B"): Expect(
        "controller", CONTROLLER_TAGS, ("q0", "q0 + band", "q0 - band", "reserve")
    ),
    ("cell-and-ue.json", "Scheduled rate", "A"): Expect("telemetry", ("arm", "ue"), ("rate",)),
    ("cell-and-ue.json", "Scheduled rate", "B"): Expect("telemetry", ("arm", "ue"), ("left unused",)),
    ("cell-and-ue.json", "MCS and CQI", "A"): Expect("telemetry", ("arm", "ue"), ("MCS", "CQI")),
    ("cell-and-ue.json", "RLC drops", "A"): RLC_DROPS,
    ("cell-and-ue.json", "Outage", "A"): Expect("telemetry", ("arm", "ue"), ("periods in outage",)),
    ("cell-and-ue.json", "Share of the cell's resource blocks", "A"): Expect(
        "cell", ("arm", "ue"), ("share of the cell",), srsran_only=True
    ),
    ("proxy.json", "Window / quota", "A"): Expect("controller", CONTROLLER_TAGS, ("w",)),
    ("proxy.json", "Scheduled rate b and its average b_bar", "A"): Expect(
        "controller", CONTROLLER_TAGS, ("b", "b_bar")
    ),
    ("proxy.json", "Sliding variable S and band", "A"): Expect(
        "controller", CONTROLLER_TAGS, ("S", "band", "-band"), SMVS_ONLY
    ),
    ("proxy.json", "Fraction of steps in band", "A"): Expect(
        "controller", CONTROLLER_TAGS, ("in band",), SMVS_ONLY, unit_interval=True
    ),
    ("proxy.json", "Goodput per flow", "A"): Expect("flow", ("arm", "flow", "ue"), ("goodput",)),
    ("proxy.json", "Telemetry staleness", "A"): Expect("controller", CONTROLLER_TAGS, ("stale",), unit_interval=True),
    ("proxy.json", "Recorder: points dropped and rejected", "A"): Expect(
        "recorder", ("arm", "source"), ("dropped", "rejected")
    ),
    ("proxy.json", "RLC drops", "A"): RLC_DROPS,
    ("run-comparison.json", "Utilization per arm", "A"): Expect("summary", ("arm",), ("utilization",)),
    ("run-comparison.json", "Goodput per arm", "A"): Expect("summary", ("arm",), ("goodput",)),
    ("run-comparison.json", "Delay p95 per arm", "A"): Expect("summary", ("arm",), ("delay p95",)),
    ("run-comparison.json", "Arms and repetitions", "A"): Expect(
        "summary",
        ("arm", "repetition"),
        (
            "utilization",
            "goodput_mbps",
            "delay_p50_ms",
            "delay_p95_ms",
            "queue_p50_bytes",
            "queue_p95_bytes",
            "rlc_drops_sdus",
            "flows_complete",
        ),
    ),
}

# Values of the template variables as a user picks them: the run, UE 1, every arm and controller ("All").
VARIABLES = {"run": None, "arm": ".*", "ue": "1", "controller": ".*"}
VARIABLE_VALUES = {"arm": ARMS, "ue": {"1"}, "controller": {"smvs", "rnf"}}


def interpolate(query: str, run: str, start_ns: int, end_ns: int) -> str:
    """What Grafana's InfluxDB datasource sends for `query`: variables, time filter and interval replaced."""
    text = query.replace("$timeFilter", f"time >= {start_ns // 10**6}ms and time <= {end_ns // 10**6}ms")
    text = text.replace("$__interval", "100ms")
    values = VARIABLES | {"run": run}
    return re.sub(r"\$(\w+)", lambda match: values[match.group(1)], text)


def test_committed_dashboards_are_the_generators_output():
    generated = dashboards.generate()
    for name, text in generated.items():
        path = GRAFANA / "dashboards" / name
        assert path.exists() and path.read_text() == text, f"{path} is stale: run `rnf grafana generate`"
    assert sorted(p.name for p in (GRAFANA / "dashboards").glob("*.json")) == sorted(generated)


def test_generating_twice_gives_the_same_bytes():
    assert dashboards.generate() == dashboards.generate()


def test_the_provisioned_datasource_is_the_one_every_panel_uses():
    (datasource,) = yaml.safe_load((GRAFANA / "provisioning" / "datasources" / "influxdb.yaml").read_text())[
        "datasources"
    ]
    assert datasource["uid"] == dashboards.DATASOURCE_UID and datasource["type"] == "influxdb"
    assert datasource["jsonData"]["version"] == "InfluxQL"
    assert datasource["secureJsonData"]["password"].startswith("${")  # from the environment, never the file
    for name, board in committed().items():
        for panel in board["panels"]:
            assert panel["datasource"]["uid"] == dashboards.DATASOURCE_UID, (name, panel["title"])
            assert all(t["datasource"]["uid"] == dashboards.DATASOURCE_UID for t in panel["targets"])


def test_the_dashboard_provider_reads_the_committed_folder():
    provisioning = yaml.safe_load((GRAFANA / "provisioning" / "dashboards" / "rnf.yaml").read_text())
    assert provisioning["apiVersion"] == 1
    (provider,) = provisioning["providers"]
    assert provider["type"] == "file" and provider["options"]["path"] == "${RNF_GRAFANA_DASHBOARDS}"


def test_dashboards_have_stable_uids_units_and_named_series():
    boards = committed()
    assert sorted(board["uid"] for board in boards.values()) == ["rnf-cell-ue", "rnf-proxy", "rnf-run-comparison"]
    for board in boards.values():
        for panel in board["panels"]:
            assert panel["fieldConfig"]["defaults"].get("unit") or panel["type"] == "table", panel["title"]
            assert all(t.get("alias") or t["resultFormat"] == "table" for t in panel["targets"]), panel["title"]
            assert panel["description"]


def test_every_query_has_an_expectation():
    assert sorted((name, title, t["refId"]) for name, title, t in targets()) == sorted(EXPECTED)


@pytest.fixture(scope="module")
def recorded_run(tmp_path_factory, influxdb):
    """A 3 s `rnf run --influx` of the proxy's smvs and rnf arms (one radio outage): series written live, the
    summary after the run, as a user's run does."""
    output = tmp_path_factory.mktemp("results")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    overrides = {
        "duration_s": "3",
        "repetitions": "1",
        "cell.namespace_prefix": f'"m{uuid.uuid4().hex[:6]}"',
        "cell.telemetry.endpoint": f'"tcp://127.0.0.1:{port}"',
        "cell.ues.0.outages": "[{start_s = 1.0, duration_s = 0.5}]",
        "arms": "[{name = 'smvs', kind = 'proxy', controller = {kind = 'smvs'}},"
        " {name = 'rnf', kind = 'proxy', controller = {kind = 'rnf'}}]",
    }
    database = "run_" + uuid.uuid4().hex[:8]
    scenario = REPO / "experiments" / "scenarios" / "proxy-smoke.toml"
    command = [str(RNF), "run", str(scenario), "--output", str(output), "--influx", f"{influxdb.url}?db={database}"]
    for key, value in overrides.items():
        command += ["--set", f"{key}={value}"]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=240)
    assert finished.returncode == 0, finished.stderr[-3000:]
    (results,) = output.iterdir()
    client = InfluxClient(influxdb.target(database))
    started = time_ns(json.loads((results / "metadata.json").read_text())["started"])
    return client, results, started - 10**9, time.time_ns()


@pytest.mark.root
def test_the_short_run_carried_traffic(recorded_run):
    """Goodput, utilization and delay exist only if TCP got through the virtual cell: say so when it did not."""
    _, results, _, _ = recorded_run
    flows = sorted((results / "runs").glob("*/flows/*.json"))
    assert flows, f"{results}: no flow outcome written"
    for flow in flows:
        outcome = json.loads(flow.read_text())
        assert outcome["received_bytes"] > 0, f"{flow}: no data through the virtual cell ({outcome['error']})"


@pytest.mark.root
@pytest.mark.parametrize(("name", "title", "target"), targets(), ids=lambda v: v["refId"] if isinstance(v, dict) else v)
def test_each_panel_query_returns_the_series_it_shows(recorded_run, name, title, target):
    client, results, start_ns, end_ns = recorded_run
    expect = EXPECTED[(name, title, target["refId"])]
    series = client.query(interpolate(target["query"], results.name, start_ns, end_ns), epoch="ms")[0].get("series", [])
    if expect.srsran_only:
        assert series == [], f"{name} / {title}: resource blocks from a virtual cell"
        return
    assert series, f"{name} / {title}: the query returned nothing"
    for one in series:
        assert one["name"] == expect.measurement
        assert sorted(one["tags"]) == sorted(expect.tags)
        assert one["tags"].get("ue", "1") == "1"
        assert one["columns"] == ["time", *expect.columns]
    assert {one["tags"]["arm"] for one in series} == expect.arms
    for index, column in enumerate(expect.columns, start=1):
        values = [row[index] for one in series for row in one["values"] if row[index] is not None]
        assert values, f"{name} / {title}: no value in column {column!r}"
        if expect.unit_interval:
            assert all(0.0 <= value <= 1.0 for value in values)


@pytest.mark.root
def test_each_template_variable_lists_the_runs_values(recorded_run):
    client, results, _, _ = recorded_run
    run = results.name
    for name, board in committed().items():
        for variable in board["templating"]["list"]:
            query = variable["query"].replace("$run", run)
            rows = client.query(query)[0]["series"]
            values = {row[1] for one in rows for row in one["values"]}
            if variable["name"] == "run":
                assert run in values, name
            else:
                assert values == VARIABLE_VALUES[variable["name"]], (name, variable["name"])


def panel_query(name: str, title: str) -> str:
    (query,) = [target["query"] for file, panel, target in targets() if (file, panel) == (name, title)]
    return query


def test_the_in_band_and_drop_panels_return_exactly_a_hand_made_series(influxdb, database):
    # 30 steps of 10 ms from a time on a 100 ms boundary, so each of Grafana's 100 ms intervals holds 10 steps
    start_ns = 1_700_000_000_000 * 10**6
    in_band = [1, 1, 1, 0, 1, 1, 0, 1, 1, 0] + [0, 0, 1, 0, 0, 1, 0, 0, 1, 0] + [1] * 10  # 7, 3 and 10 of 10
    dropped = [0] * 30
    dropped[4], dropped[25], dropped[29] = 2, 3, 2  # 2, 0 and 5 SDUs per interval: 2, 2, 7 summed up
    tags = "run=hand,arm=smvs,ue=1"
    lines = [
        f"controller,{tags},controller=smvs,ue_ip=172.16.0.2 in_band={flag}i {start_ns + step * 10**7}"
        for step, flag in enumerate(in_band)
    ] + [
        f"telemetry,{tags},cell=1,rnti=70 dropped_sdus={count}i {start_ns + step * 10**7}"
        for step, count in enumerate(dropped)
    ]
    client = influxdb.client(database)
    assert client.write(lines).outcome is Outcome.WRITTEN
    window = (start_ns - 10**9, start_ns + 10**9)

    def panel(name: str, title: str) -> list[list]:
        (series,) = client.query(interpolate(panel_query(name, title), "hand", *window), epoch="ms")[0]["series"]
        return series["values"]

    start_ms = start_ns // 10**6
    assert panel("proxy.json", "Fraction of steps in band") == [
        [start_ms, 0.7],
        [start_ms + 100, 0.3],
        [start_ms + 200, 1.0],
    ]
    for name in ("proxy.json", "cell-and-ue.json"):
        assert panel(name, "RLC drops") == [[start_ms, 2], [start_ms + 100, 2], [start_ms + 200, 7]]


def test_the_resource_block_panel_returns_each_ues_share_of_the_cell_from_a_hand_made_series(influxdb, database):
    # Two UEs of a 25-PRB cell, 10 periods of 10 ms per 100 ms interval, each period 10 TTIs (250 PRBs); in the second
    # interval the eNB ran 9 TTIs per period (225 PRBs). UE 1 gets 150 PRBs a period, then 100; UE 2 gets 100, then 125.
    start_ns = 1_700_000_000_000 * 10**6
    lines = []
    for step in range(20):
        capacity = 250 if step < 10 else 225
        for ue, grants in ((1, 150 if step < 10 else 100), (2, 100 if step < 10 else 125)):
            lines.append(
                f"cell,run=prbs,arm=smvs,ue={ue},cell=1,rnti={69 + ue},cell_kind=srsran-zmq "
                f"grant_prbs={grants}i,capacity_prbs={capacity}i {start_ns + step * 10**7}"
            )
    # a virtual cell's points carry no resource blocks: not in the panel
    lines.append(f"cell,run=prbs,arm=smvs,ue=3,cell=1,cell_kind=virtual delivered_bytes=1i {start_ns}")
    client = influxdb.client(database)
    assert client.write(lines).outcome is Outcome.WRITTEN
    query = interpolate(
        panel_query("cell-and-ue.json", "Share of the cell's resource blocks"),
        "prbs",
        start_ns - 10**9,
        start_ns + 10**9,
    )
    series = {one["tags"]["ue"]: one["values"] for one in client.query(query, epoch="ms")[0]["series"]}
    start_ms = start_ns // 10**6
    # UE 1: 1500 / 2500 = 0.6, then 1000 / 2250; UE 2: 1000 / 2500 = 0.4, then 1250 / 2250; together 1 each interval
    assert series["1"] == [[start_ms, 0.6], [start_ms + 100, pytest.approx(1000 / 2250)]]
    assert series["2"] == [[start_ms, 0.4], [start_ms + 100, pytest.approx(1250 / 2250)]]
    assert sorted(series) == ["1", "2"]
