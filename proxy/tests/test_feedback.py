"""What smvs and rnf share: the fallback before the first message, and banks that grow."""

import numpy as np
from rnf_proxy.control import AckSample, Mode, RanSample, Tick
from rnf_proxy.feedback import RanBatch
from rnf_proxy.rnf import Rnf, RnfBank, RnfConfig


def test_before_any_telemetry_the_ue_is_under_the_fallback_window():
    rnf = Rnf(RnfConfig())
    decision = rnf.update(Tick(), now=0.0)
    assert decision.mode is Mode.WINDOW and decision.limit == 10 * 1448  # the standard initial window
    assert rnf.in_fallback and rnf.state().fallback
    grown = rnf.update(AckSample(14_480, 0.01, 14_480, 0.02, 0.02, window_limited=True), now=0.01)
    assert grown.limit == 2 * 14_480  # slow start on the UE's ACKs, as a feedback-free sender would


def test_a_bank_grows_and_keeps_its_rows():
    bank = RnfBank(RnfConfig(tau_s=0.01), capacity=2)
    controllers = [Rnf(bank=bank) for _ in range(5)]
    assert bank.size == 5 and len(bank.steps) >= 5
    for index, controller in enumerate(controllers):
        controller.update(RanSample(queue=1, served=1_000 * (index + 1), period_s=0.01), now=0.0)
    assert list(bank.rate[:5]) == [100_000.0 * (i + 1) for i in range(5)]


def test_an_outage_is_flagged_or_a_period_served_nothing_while_data_waited():
    batch = RanBatch.of([
        RanSample(queue=0, served=0, period_s=0.01, outage=True),
        RanSample(queue=5, served=0, period_s=0.01),
        RanSample(queue=5, served=0, period_s=0.01),
        RanSample(queue=0, served=0, period_s=0.01),
    ])  # fmt: skip
    assert list(batch.link_down(np.array([0.0, 5.0, 0.0, 5.0]))) == [True, True, False, False]
