"""Numbers from users: finite floats and seeds by type, so NaN and infinity never reach a range check or a model.

For click options `FiniteFloat` and `SEED`; for configuration files `Seed`, and the `Strict` base model of
`rnf_foundation.config` (no float field of a configuration takes NaN or infinity unless it says so).
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import click
from pydantic import Field

MAX_SEED = 2**63 - 1  # numpy's generators take any non-negative int; a run adds its repetition to the seed


class FiniteFloat(click.FloatRange):
    """A float range that refuses NaN and infinity by name, before its bounds are checked."""

    name = "finite float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        number = click.types.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        result: float = super().convert(number, param, ctx)
        return result


class SeedRange(click.IntRange):
    """A seed on the command line: 0 or more, and below 2^63 as the datapath's u64 needs after a run adds to it."""

    name = "seed"

    def __init__(self) -> None:
        super().__init__(min=0, max=MAX_SEED)

    def _describe_range(self) -> str:
        return "x>=0 (below 2^63)"


SEED = SeedRange()
Seed = Annotated[int, Field(ge=0, le=MAX_SEED, description="a random generator's seed, 0 or more")]
