"""The Grafana dashboards as code: built with grafana-foundation-sdk, written as deterministic JSON.

`rnf grafana generate` writes them to grafana/dashboards/, where they are committed; a test fails when the
committed files differ from what this module produces. Every query is raw InfluxQL on the datasource that
grafana/provisioning/datasources/ provisions (uid `rnf-influxdb`), over the series of grafana/SCHEMA.md.

Conventions of the queries: `$timeFilter` and `GROUP BY time($__interval)` for time series, `fill(none)`, the run
as one value (`"run" = '$run'`), arm, UE and controller as regular expressions (`=~ /^$ue$/`) since they allow
several values, with `.*` as "All".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Self

from grafana_foundation_sdk.builders import bargauge, common, dashboard, table, timeseries
from grafana_foundation_sdk.cog import builder as cogbuilder
from grafana_foundation_sdk.cog import variants as cogvariants
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common as common_models
from grafana_foundation_sdk.models import dashboard as models

DATASOURCE_UID = "rnf-influxdb"
DATASOURCE = models.DataSourceRef(type_val="influxdb", uid=DATASOURCE_UID)
TAG = "rnf"
DASHBOARDS_DIR = Path(__file__).resolve().parents[3] / "grafana" / "dashboards"

RUN = "\"run\" = '$run'"
ARM = '"arm" =~ /^$arm$/'
UE = '"ue" =~ /^$ue$/'
CONTROLLER = '"controller" =~ /^$controller$/'


class InfluxQLQuery(cogvariants.Dataquery):
    """A raw InfluxQL target of Grafana's InfluxDB datasource (the SDK has no InfluxDB query type)."""

    def __init__(self, ref_id: str, query: str, alias: str, result_format: str) -> None:
        self.ref_id = ref_id
        self.query = query
        self.alias = alias
        self.result_format = result_format

    def to_json(self) -> dict[str, object]:
        payload: dict[str, object] = {
            "datasource": DATASOURCE,
            "refId": self.ref_id,
            "query": self.query,
            "rawQuery": True,
            "resultFormat": self.result_format,
        }
        if self.alias:
            payload["alias"] = self.alias
        return payload


class InfluxQL(cogbuilder.Builder[InfluxQLQuery]):
    def __init__(self, ref_id: str, query: str) -> None:
        self._internal = InfluxQLQuery(ref_id, query, "", "time_series")

    def alias(self, alias: str) -> Self:
        """Series name: `$tag_NAME` is a tag's value, `$col` the column (the AS name)."""
        self._internal.alias = alias
        return self

    def table(self) -> Self:
        self._internal.result_format = "table"
        return self

    def build(self) -> InfluxQLQuery:
        return self._internal


def series_query(select: str, measurement: str, filters: Sequence[str], group_by: Sequence[str]) -> str:
    """A time series query: `select` per `$__interval` within the dashboard's time range, one series per tag set."""
    where = " AND ".join([*filters, "$timeFilter"])
    tags = "".join(f', "{tag}"' for tag in group_by)
    return f'SELECT {select} FROM "{measurement}" WHERE {where} GROUP BY time($__interval){tags} fill(none)'


def run_query(select: str, measurement: str, group_by: Sequence[str]) -> str:
    """A query over all of a run, whatever the dashboard's time range (the `summary` measurement)."""
    tags = ", ".join(f'"{tag}"' for tag in group_by)
    return f'SELECT {select} FROM "{measurement}" WHERE {RUN} GROUP BY {tags}'


def tag_variable(
    name: str, label: str, measurement: str, where: str = "", multi: bool = True
) -> dashboard.QueryVariable:
    """A variable listing a tag's values; several values and "All" (as `.*`) unless `multi` is False."""
    query = f'SHOW TAG VALUES FROM "{measurement}" WITH KEY = "{name}"' + (f" WHERE {where}" if where else "")
    variable = (
        dashboard.QueryVariable(name)
        .label(label)
        .datasource(DATASOURCE)
        .query(query)
        .refresh(models.VariableRefresh.ON_DASHBOARD_LOAD)
    )
    if multi:
        return variable.sort(models.VariableSort.NATURAL_ASC).multi(True).include_all(True).all_value(".*")
    # Results folders are named <date>-<time>-<scenario>: newest first.
    return variable.sort(models.VariableSort.ALPHABETICAL_DESC)


def legend() -> common.VizLegendOptions:
    return (
        common.VizLegendOptions()
        .display_mode(common_models.LegendDisplayMode.TABLE)
        .placement(common_models.LegendPlacement.BOTTOM)
        .show_legend(True)
        .calcs(["mean", "max", "lastNotNull"])
    )


def graph(panel_id: int, title: str, unit: str, description: str) -> timeseries.Panel:
    return (
        timeseries.Panel()
        .id(panel_id)
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .height(9)
        .span(12)
        .legend(legend())
        .tooltip(common.VizTooltipOptions().mode(common_models.TooltipDisplayMode.MULTI))
    )


def per_arm(panel_id: int, title: str, unit: str, description: str, query: str) -> bargauge.Panel:
    return (
        bargauge.Panel()
        .id(panel_id)
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .height(8)
        .span(8)
        .orientation(common_models.VizOrientation.HORIZONTAL)
        .display_mode(common_models.BarGaugeDisplayMode.BASIC)
        .reduce_options(common.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
        .with_target(InfluxQL("A", query).alias("$tag_arm"))
    )


def links() -> dashboard.DashboardLink:
    return (
        dashboard.DashboardLink("rnf dashboards")
        .type(models.DashboardLinkType.DASHBOARDS)
        .tags([TAG])
        .as_dropdown(True)
        .include_vars(True)
        .keep_time(True)
    )


def base(uid: str, title: str, description: str, live: bool) -> dashboard.Dashboard:
    board = (
        dashboard.Dashboard(title)
        .uid(uid)
        .description(description)
        .tags([TAG])
        .editable()
        .tooltip(models.DashboardCursorSync.CROSSHAIR)
        .timezone("browser")
        .link(links())
    )
    if live:
        return (
            board.time("now-5m", "now")
            .refresh("1s")
            .timepicker(dashboard.TimePicker().refresh_intervals(["1s", "5s", "30s", "1m", "5m"]))
        )
    return board.time("now-30d", "now")


def rlc_drops(panel_id: int) -> timeseries.Panel:
    return graph(
        panel_id,
        "RLC drops",
        "short",
        "SDUs the eNB's RLC queue dropped (queue full), counted from the start of the time range.",
    ).with_target(
        InfluxQL(
            "A",
            series_query(
                'cumulative_sum(sum("dropped_sdus")) AS "dropped SDUs"', "telemetry", (RUN, ARM, UE), ("arm", "ue")
            ),
        ).alias("ue$tag_ue $tag_arm")
    )


def resource_blocks(panel_id: int) -> timeseries.Panel:
    """Each UE's share of the cell's resource blocks (`cell` points of a srsRAN cell whose eNB reports them, contract
    1.2): its granted PRBs over the cell's PRBs in the TTIs the eNB ran, exact. Every UE of the run, whatever `$ue`:
    the cell is what they share."""
    return graph(
        panel_id,
        "Share of the cell's resource blocks",
        "percentunit",
        "Each UE's granted PRBs (new data and HARQ retransmissions) over the cell's PRBs in the TTIs the eNB ran, per "
        "interval; the UEs' lines add up to the share of the cell in use. srsRAN cells whose eNB reports resource "
        "blocks (telemetry contract 1.2) only: empty on the virtual cell, where each UE's trace is a link of its own.",
    ).with_target(
        InfluxQL(
            "A",
            series_query(
                'sum("grant_prbs") / sum("capacity_prbs") AS "share of the cell"',
                "cell",
                (RUN, ARM, '"capacity_prbs" > 0'),
                ("arm", "ue"),
            ),
        ).alias("ue$tag_ue $tag_arm")
    )


def cell_and_ue() -> dashboard.Dashboard:
    """Per UE: what the eNB reports (queue, scheduled rate, MCS/CQI, drops, outage) against the controller's q0, and
    the UEs' shares of the cell's resource blocks."""
    queue = (
        graph(
            1,
            "RLC queue, q0 and band: UE $ue",
            "decbytes",
            "The UE's RLC downlink queue as the eNB reports it (telemetry), with the controller's reference q0, "
            "q0 ± the predicted quasi-sliding band (paper 000 eq. 37) and the reserve the default reference holds "
            "for what an empty queue cost the link, where a controller records them.",
        )
        .repeat("ue")
        .repeat_direction("h")
        .with_target(
            InfluxQL(
                "A", series_query('mean("queue_bytes") AS "queue"', "telemetry", (RUN, ARM, UE), ("arm", "ue"))
            ).alias("$col $tag_arm")
        )
        .with_target(
            InfluxQL(
                "B",
                series_query(
                    'mean("q0_bytes") AS "q0", mean("q0_bytes") + mean("band_bytes") AS "q0 + band", '
                    'mean("q0_bytes") - mean("band_bytes") AS "q0 - band", mean("reserve_bytes") AS "reserve"',
                    "controller",
                    (RUN, ARM, UE, CONTROLLER),
                    ("arm", "ue", "controller"),
                ),
            ).alias("$col $tag_arm $tag_controller")
        )
        .override_by_regexp(
            "^q0 .*",
            [models.DynamicConfigValue(id_val="custom.lineStyle", value={"fill": "dash", "dash": [10, 10]})],
        )
    )
    rate = (
        graph(
            2,
            "Scheduled rate",
            "bps",
            "Downlink rate the eNB's scheduler granted the UE over each telemetry period (new and retransmitted "
            "data), and the rate the link offered in the TTIs that found the UE's queue empty, which it left unused "
            "(telemetry contract 1.3; absent where the eNB does not count it).",
        )
        .with_target(
            InfluxQL(
                "A", series_query('mean("sched_rate_bps") AS "rate"', "telemetry", (RUN, ARM, UE), ("arm", "ue"))
            ).alias("ue$tag_ue $tag_arm")
        )
        .with_target(
            InfluxQL(
                "B",
                series_query(
                    '8000000 * sum("idle_capacity_bytes") / sum("period_us") AS "left unused"',
                    "telemetry",
                    (RUN, ARM, UE),
                    ("arm", "ue"),
                ),
            ).alias("$col ue$tag_ue $tag_arm")
        )
    )
    mcs = graph(
        3,
        "MCS and CQI",
        "none",
        "Mean downlink MCS and CQI of the period, as the eNB reports them (absent when unknown).",
    ).with_target(
        InfluxQL(
            "A",
            series_query(
                'mean("mean_mcs") AS "MCS", mean("mean_cqi") AS "CQI"', "telemetry", (RUN, ARM, UE), ("arm", "ue")
            ),
        ).alias("$col ue$tag_ue $tag_arm")
    )
    outage = (
        graph(
            5,
            "Outage",
            "short",
            "Telemetry periods the eNB flagged as radio outage, per interval; empty when there was none.",
        )
        .draw_style(common_models.GraphDrawStyle.BARS)
        .fill_opacity(60)
        .no_value("no outage")
        .with_target(
            InfluxQL(
                "A",
                series_query(
                    'count("outage") AS "periods in outage"',
                    "telemetry",
                    (RUN, ARM, UE, '"outage" = true'),
                    ("arm", "ue"),
                ),
            ).alias("ue$tag_ue $tag_arm")
        )
    )
    return (
        base(
            "rnf-cell-ue",
            "rnf: cell and UE",
            "What the eNB (or the virtual cell) reports per UE, live or for a recorded run.",
            live=True,
        )
        .with_variable(tag_variable("run", "Run", "telemetry", multi=False))
        .with_variable(tag_variable("arm", "Arm", "telemetry", RUN))
        .with_variable(tag_variable("ue", "UE", "telemetry", RUN))
        .with_variable(tag_variable("controller", "Controller", "controller", RUN))
        .with_panel(queue)
        .with_panel(rate)
        .with_panel(mcs)
        .with_panel(rlc_drops(4))
        .with_panel(outage)
        .with_panel(resource_blocks(6))
    )


def proxy() -> dashboard.Dashboard:
    """Per UE and controller: the proxy's decisions and state, and what the flows got."""
    controller_filters = (RUN, ARM, UE, CONTROLLER)
    controller_tags = ("arm", "ue", "controller")
    window = graph(
        1,
        "Window / quota",
        "decbytes",
        "The controller's decision per UE: the per-step quota (smvs) or the in-flight window (rnf, clamp, ewma).",
    ).with_target(
        InfluxQL("A", series_query('mean("w_bytes") AS "w"', "controller", controller_filters, controller_tags)).alias(
            "ue$tag_ue $tag_controller $tag_arm"
        )
    )
    rate = graph(
        2,
        "Scheduled rate b and its average b_bar",
        "bps",
        "The served rate the controller measured over the step, and its moving average (paper 000 eq. 19).",
    ).with_target(
        InfluxQL(
            "A",
            series_query(
                'mean("b_bps") AS "b", mean("b_bar_bps") AS "b_bar"', "controller", controller_filters, controller_tags
            ),
        ).alias("$col ue$tag_ue $tag_controller $tag_arm")
    )
    sliding = graph(
        3,
        "Sliding variable S and band",
        "decbytes",
        "The predicted sliding variable S(k) (paper 000 eq. 36) within ± the quasi-sliding band (eq. 37).",
    ).with_target(
        InfluxQL(
            "A",
            series_query(
                'mean("s_bytes") AS "S", mean("band_bytes") AS "band", mean("band_bytes") * -1 AS "-band"',
                "controller",
                controller_filters,
                controller_tags,
            ),
        ).alias("$col ue$tag_ue $tag_controller $tag_arm")
    )
    in_band = (
        graph(
            4,
            "Fraction of steps in band",
            "percentunit",
            "Share of the control steps with |q - q0| < band, per interval.",
        )
        .min(0)
        .max(1)
        .with_target(
            InfluxQL(
                "A", series_query('mean("in_band") AS "in band"', "controller", controller_filters, controller_tags)
            ).alias("ue$tag_ue $tag_controller $tag_arm")
        )
    )
    goodput = graph(
        5,
        "Goodput per flow",
        "bps",
        "Application bytes each flow's receiver got over its last progress interval (100 ms).",
    ).with_target(
        InfluxQL(
            "A", series_query('mean("goodput_bps") AS "goodput"', "flow", (RUN, ARM, UE), ("arm", "ue", "flow"))
        ).alias("$tag_flow $tag_arm")
    )
    stale = (
        graph(
            6,
            "Telemetry staleness",
            "percentunit",
            "Share of the control steps run on the fallback because telemetry was missing or stale, per interval.",
        )
        .min(0)
        .max(1)
        .with_target(
            InfluxQL(
                "A", series_query('mean("stale") AS "stale"', "controller", controller_filters, controller_tags)
            ).alias("ue$tag_ue $tag_controller $tag_arm")
        )
    )
    recorder = graph(
        7,
        "Recorder: points dropped and rejected",
        "short",
        "Points the InfluxDB writers of the run and the proxy dropped (queue full while InfluxDB was slow or "
        "down) or that InfluxDB rejected, cumulative.",
    ).with_target(
        InfluxQL(
            "A",
            series_query(
                'max("dropped_points") AS "dropped", max("rejected_points") AS "rejected"',
                "recorder",
                (RUN, ARM),
                ("arm", "source"),
            ),
        ).alias("$col $tag_source $tag_arm")
    )
    return (
        base(
            "rnf-proxy",
            "rnf: proxy",
            "The split proxy's window controllers per UE, the flows' goodput, and the recorders' health.",
            live=True,
        )
        .with_variable(tag_variable("run", "Run", "controller", multi=False))
        .with_variable(tag_variable("arm", "Arm", "controller", RUN))
        .with_variable(tag_variable("ue", "UE", "controller", RUN))
        .with_variable(tag_variable("controller", "Controller", "controller", RUN))
        .with_panel(window)
        .with_panel(rate)
        .with_panel(sliding)
        .with_panel(in_band)
        .with_panel(goodput)
        .with_panel(stale)
        .with_panel(recorder)
        .with_panel(rlc_drops(8))
    )


def run_comparison() -> dashboard.Dashboard:
    """Per arm of one run, from its summary (summary.json): the numbers of `rnf report`."""
    columns = {
        "utilization": "percentunit",
        "goodput_mbps": "Mbits",
        "delay_p50_ms": "ms",
        "delay_p95_ms": "ms",
        "queue_p50_bytes": "decbytes",
        "queue_p95_bytes": "decbytes",
        "rlc_drops_sdus": "short",
        "flows_complete": "short",
    }
    runs = table.Panel().id(4).title("Arms and repetitions").datasource(DATASOURCE).height(9).span(24)
    runs = runs.description("summary.json's entries: one row per arm and repetition.").with_target(
        InfluxQL("A", run_query(", ".join(f'"{name}"' for name in columns), "summary", ("arm", "repetition"))).table()
    )
    for name, unit in columns.items():
        runs = runs.override_by_name(name, [models.DynamicConfigValue(id_val="unit", value=unit)])
    return (
        base(
            "rnf-run-comparison",
            "rnf: run comparison",
            "The arms of one run side by side (mean over repetitions), from its summary.",
            live=False,
        )
        .with_variable(tag_variable("run", "Run", "summary", multi=False))
        .with_panel(
            per_arm(
                1,
                "Utilization per arm",
                "percentunit",
                "Delivered bytes over the capacity of the periods while data was waiting (mean over repetitions).",
                run_query('mean("utilization") AS "utilization"', "summary", ("arm",)),
            )
            .min(0)
            .max(1)
        )
        .with_panel(
            per_arm(
                2,
                "Goodput per arm",
                "Mbits",
                "Sum of the flows' goodput (mean over repetitions).",
                run_query('mean("goodput_mbps") AS "goodput"', "summary", ("arm",)),
            )
        )
        .with_panel(
            per_arm(
                3,
                "Delay p95 per arm",
                "ms",
                "95th percentile of the packets' one-way delay through the cell (mean over repetitions).",
                run_query('mean("delay_p95_ms") AS "delay p95"', "summary", ("arm",)),
            )
        )
        .with_panel(runs)
    )


DASHBOARDS = {"cell-and-ue.json": cell_and_ue, "proxy.json": proxy, "run-comparison.json": run_comparison}


def render(board: dashboard.Dashboard) -> str:
    """The dashboard's JSON: sorted keys and a final newline, so that equal dashboards are equal files."""
    return json.dumps(board.build(), cls=JSONEncoder, sort_keys=True, indent=2) + "\n"


def generate() -> dict[str, str]:
    """File name -> contents of every dashboard."""
    return {name: render(build()) for name, build in DASHBOARDS.items()}


def write(directory: Path) -> list[Path]:
    """Write every dashboard into `directory`; the files whose contents changed."""
    directory.mkdir(parents=True, exist_ok=True)
    changed = []
    for name, text in generate().items():
        path = directory / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed
