"""Numbers on the command line: finite floats by type, so NaN and infinity never reach a range check or a model."""

from __future__ import annotations

import math
from typing import Any

import click


class FiniteFloat(click.FloatRange):
    """A float range that refuses NaN and infinity by name, before its bounds are checked."""

    name = "finite float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        number = click.types.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        result: float = super().convert(number, param, ctx)
        return result


SEED = click.IntRange(min=0)
