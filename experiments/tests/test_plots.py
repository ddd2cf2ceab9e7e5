"""The time plots' resource-block panel: each UE's share of the cell summed over a window of periods."""

import math

import numpy as np
import pytest
from rnf_experiments.plots import rolling_share


def test_the_share_sums_grants_and_capacity_over_the_last_periods():
    granted = np.array([250, 0, 100, 225, 0])
    capacity = np.array([250, 250, 250, 225, 0])
    share = rolling_share(granted, capacity, periods=2)
    # (250) / 250; (250 + 0) / 500; (0 + 100) / 500; (100 + 225) / 475; (225 + 0) / 225
    assert share.tolist() == pytest.approx([1.0, 0.5, 0.2, 325 / 475, 1.0])


def test_no_capacity_is_no_share():
    assert math.isnan(rolling_share(np.array([0, 0]), np.array([0, 0]), periods=2)[1])
