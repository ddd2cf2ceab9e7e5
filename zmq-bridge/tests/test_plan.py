import math

from rnf_bridge.plan import Fading, Plan, UePlan
from rnf_bridge.schedule import Schedule


def test_a_plan_survives_json_with_silence_and_fading():
    plan = Plan(
        sample_rate=5.76e6,
        enb_tx="tcp://127.0.0.1:2000",
        enb_rx="tcp://127.0.0.1:2001",
        ues=(
            UePlan("ue1", "tcp://127.0.0.1:2101", "tcp://127.0.0.1:2100", Schedule.constant(-3.0), noise_dbfs=-60.0),
            UePlan(
                "ue2",
                "tcp://127.0.0.1:2201",
                "tcp://127.0.0.1:2200",
                Schedule((0.0, 9.0, 10.0), (0.0, -math.inf, 0.0), loop=True),
                fading=Fading("rician", 5.0, k_factor=4.0, seed=9),
            ),
        ),
        control="tcp://127.0.0.1:0",
        enb_noise_dbfs=-70.0,
        peer_timeout_s=2.0,
        seed=4,
    )
    assert Plan.from_json(plan.to_json()) == plan
