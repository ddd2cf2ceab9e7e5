"""What smvs and rnf share: the fallback before the first message, and banks that grow."""

import math

import pytest
from rnf_proxy.control import AckSample, Mode, RanSample, Tick
from rnf_proxy.rnf import Rnf, RnfBank, RnfConfig
from rnf_telemetry.message import TelemetryMessage


def test_before_any_telemetry_the_ue_is_under_the_fallback_window():
    rnf = Rnf(RnfConfig())
    decision = rnf.update(Tick(), now=0.0)
    assert decision.mode is Mode.WINDOW and decision.limit == 10 * 1448  # the standard initial window
    assert rnf.in_fallback and rnf.state().fallback
    grown = rnf.update(AckSample(14_480, 0.01, 14_480, 0.02, 0.02, window_limited=True), now=0.01)
    assert grown.limit == 2 * 14_480  # slow start on the UE's ACKs, as a feedback-free sender would


def test_a_bank_grows_and_keeps_its_rows():
    bank = RnfBank(RnfConfig(tau_s=0.01), capacity=2)
    first = [Rnf(bank=bank) for _ in range(2)]
    for index, controller in enumerate(first):  # the two rows hold state before the bank grows
        controller.update(RanSample(queue=1, served=1_000 * (index + 1), period_s=0.01), now=0.0)
    controllers = first + [Rnf(bank=bank) for _ in range(3)]  # 2 -> 4 -> 8 rows
    assert bank.size == 5 and len(bank.steps) >= 5
    assert list(bank.rate[:2]) == [100_000.0, 200_000.0] and list(bank.steps[:2]) == [1, 1]
    for index, controller in enumerate(controllers):
        controller.update(RanSample(queue=1, served=1_000 * (index + 1), period_s=0.01), now=0.01)
    assert list(bank.steps[:5]) == [2, 2, 1, 1, 1]  # the first two went on from their step
    assert list(bank.rate[:5]) == [100_000.0 * (i + 1) for i in range(5)]


def test_an_outage_is_what_the_enb_flags_not_a_period_that_served_nothing():
    bank = RnfBank(RnfConfig(tau_s=0.01))
    flagged, waiting, newly_waiting, idle = (Rnf(bank=bank) for _ in range(4))
    for controller, previous_queue in ((flagged, 0), (waiting, 5), (newly_waiting, 0), (idle, 5)):
        controller.update(RanSample(queue=previous_queue, served=1_000, period_s=0.01), now=0.0)
    for controller, sample in (
        (flagged, RanSample(queue=0, served=0, period_s=0.01, outage=True)),
        (waiting, RanSample(queue=5, served=0, period_s=0.01)),  # a gap of a bursty link: the rate fell
        (newly_waiting, RanSample(queue=5, served=0, period_s=0.01)),
        (idle, RanSample(queue=0, served=0, period_s=0.01)),
    ):
        controller.update(sample, now=0.01)
    outages = [controller.state().outage for controller in (flagged, waiting, newly_waiting, idle)]
    assert outages == [True, False, False, False]


def test_a_report_for_a_row_the_bank_does_not_have_is_refused_before_anything_is_stepped():
    bank = RnfBank(RnfConfig(tau_s=0.01), capacity=2)
    Rnf(bank=bank)
    with pytest.raises(ValueError, match="refused"):
        bank.step([0, 2], [RanSample(queue=1, served=1, period_s=0.01)] * 2, now=0.0)
    assert bank.steps[0] == 0


def test_b_max_is_the_reported_byte_limit_or_the_sdu_limit_in_full_size_packets():
    def sample(limit_bytes: int, limit_sdus: int) -> RanSample:
        message = TelemetryMessage(
            cell_id=1, rnti=0x46, lcid=3, timestamp_ns=0, tti=0, seq=0, period_us=10_000,
            dl_queue_limit_bytes=limit_bytes, dl_queue_limit_sdus=limit_sdus, ue_ip="172.16.0.2",
        )  # fmt: skip
        return RanSample.from_message(message)

    assert sample(300_000, 0).queue_limit == 300_000  # the virtual cell: bytes
    assert sample(300_000, 256).queue_limit == 300_000  # bytes win when both are reported
    assert sample(0, 256).queue_limit == 384_000  # srsenb: 256 SDUs of at most 1500 B
    assert sample(0, 0).queue_limit == 0  # none: B_max must be configured


def test_the_capacity_an_empty_queue_left_is_the_enbs_count_or_not_known():
    def sample(**idle: int) -> RanSample:
        message = TelemetryMessage(
            cell_id=1, rnti=0x46, lcid=3, timestamp_ns=0, tti=0, seq=0, period_us=10_000, ue_ip="172.16.0.2", **idle
        )
        return RanSample.from_message(message)

    assert sample(dl_idle_ttis=3, dl_idle_capacity_bytes=4_500).idle == 4_500
    assert sample(dl_idle_ttis=0, dl_idle_capacity_bytes=0).idle == 0  # counted: the queue never ran empty
    assert math.isnan(sample().idle)  # a publisher that does not count them (before contract 1.3)
