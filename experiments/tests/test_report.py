"""The comparison table: how many transfers completed where some did not; its warnings: a run whose delay
measurement lost packets is named, with what it still covers; a run whose controller stood still is named, with for
how long or for what share of the run."""

import math

from rnf_experiments import report


def _arm(name, complete, started):
    values = {key: math.nan for _, key, _, _ in report.COLUMNS} | {"ttsu_s": 0.83}
    return values | {"arm": name, "sweep_value": None, "flows_complete": complete, "flows": started, "repetitions": 3}


def test_where_some_transfers_did_not_complete_the_table_says_how_many_did():
    # TTSU is the mean over completed pages only: cubic's 9, 10 and 9 of 13 are a mean of 9.33
    summary = {"sweep": None, "arms": {"smvs": _arm("smvs", 13.0, 13.0), "cubic": _arm("cubic", 28 / 3, 13.0)}}
    table = report.table({"web": summary})
    headers = [column.header for column in table.columns]
    assert headers == ["arm", "TTSU s", "done", "runs"]
    assert list(table.columns[2].cells) == ["13 of 13", "9.3 of 13"]
    many = {"sweep": None, "arms": {"web": _arm("web", 1199.0, 1200.0)}}  # whole counts stay whole, however many
    assert list(report.table({"web": many}).columns[2].cells) == ["1199 of 1200"]


def test_where_every_transfer_completed_there_is_no_column_for_it():
    summary = {"sweep": None, "arms": {"smvs": _arm("smvs", 1.0, 1.0), "cubic": _arm("cubic", 1.0, 1.0)}}
    assert "done" not in [column.header for column in report.table({"bulk": summary}).columns]


def test_runs_whose_delay_measurement_lost_packets_are_named():
    def run(arm, lost):
        return {"arm": arm, "sweep_value": None, "repetition": 0, "delay_sdus": 900, "delay_records_lost": lost}

    older = {"arm": "old", "sweep_value": None, "repetition": 0}  # a summary from before the key
    summary = {"runs": [run("smvs", 12.0), run("cubic", 0.0), run("bbr", math.nan), older]}
    assert report.lossy_delay_runs(summary) == [("smvs, repetition 0", 12, 900)]


def test_runs_whose_controller_made_no_step_for_more_than_five_periods_are_named():
    def run(arm, gap):
        return {"arm": arm, "sweep_value": None, "repetition": 1, "decision_gap_max_ms": gap}

    older = {"arm": "old", "sweep_value": None, "repetition": 0}  # a summary from before the key
    summary = {"runs": [run("smvs", 157.3), run("rnf", 50.0), run("cubic", math.nan), older]}
    assert report.stalled_runs(summary) == [("smvs, repetition 1", 157.3)]


def test_runs_whose_controller_stood_still_for_more_than_one_percent_of_the_run_are_named():
    def run(arm, share):
        return {"arm": arm, "sweep_value": None, "repetition": 2, "decision_stalled_share": share}

    older = {"arm": "old", "sweep_value": None, "repetition": 0}  # a summary from before the key
    summary = {"runs": [run("smvs", 0.029), run("rnf", 0.01), run("smvs-paper", 0.0), run("cubic", math.nan), older]}
    assert report.stalled_share_runs(summary) == [("smvs, repetition 2", 0.029)]


def test_runs_whose_enb_ran_at_less_than_half_of_real_time_are_named():
    def run(arm, rate):
        return {"arm": arm, "sweep_value": None, "repetition": 3, "enb_ttis_per_ms": rate}

    older = {"arm": "old", "sweep_value": None, "repetition": 0}  # a summary from before the key
    summary = {"runs": [run("bbr", 0.019), run("cubic", 0.5), run("smvs", 0.74), run("virtual", math.nan), older]}
    assert report.slow_enb_runs(summary) == [("bbr, repetition 3", 0.019)]


def test_a_sweep_over_trace_files_names_each_plot_after_its_trace_without_the_path_separators():
    name = report.sweep_plot_name("throughput-delay", "trace", "/work/traces/TMobile-LTE-short.down")
    assert name == "throughput-delay-trace-work_traces_TMobile-LTE-short.down.png"
    assert report.sweep_plot_name("delay-cdf", "period_s", 0.04) == "delay-cdf-period_s-0.04.png"
