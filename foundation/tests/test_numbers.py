"""Finite floats and seeds, on the command line and in configuration files: NaN and infinity are refused by type,
never by the accident of a range check."""

import math

import click
import pytest
from pydantic import BaseModel, ValidationError
from rnf_foundation.config import Strict
from rnf_foundation.numbers import MAX_SEED, SEED, FiniteFloat, Seed


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "NaN", "1e999"])
def test_finite_float_refuses_nan_and_infinity_by_name(text):
    with pytest.raises(click.BadParameter, match="is not a finite number"):
        FiniteFloat(min=0, max=10).convert(text, None, None)


def test_finite_float_keeps_its_range():
    assert FiniteFloat(min=0, max=10).convert("2.5", None, None) == 2.5
    with pytest.raises(click.BadParameter, match="is not in the range"):
        FiniteFloat(min=0, max=10).convert("11", None, None)


@pytest.mark.parametrize(
    ("text", "reason"), [("-3", "x>=0"), (str(MAX_SEED + 1), "below 2^63"), ("1.5", "not a valid")]
)
def test_seed_option(text, reason):
    assert SEED.convert("0", None, None) == 0
    with pytest.raises(click.BadParameter, match=reason.replace("^", r"\^")):
        SEED.convert(text, None, None)


class Config(Strict):
    seed: Seed = 1
    rate: float = 1.0
    unbounded: float = 0.0


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("field", ["rate", "unbounded"])
def test_strict_models_refuse_nan_and_infinity_in_every_float(field, value):
    with pytest.raises(ValidationError) as raised:
        Config.model_validate({field: value})
    (problem,) = raised.value.errors()
    assert problem["loc"] == (field,) and problem["msg"] == "Input should be a finite number"


@pytest.mark.parametrize(("seed", "reason"), [(-3, "greater than or equal to 0"), (MAX_SEED + 1, "less than or equal")])
def test_seed_field(seed, reason):
    with pytest.raises(ValidationError, match=reason):
        Config.model_validate({"seed": seed})


def test_strict_models_refuse_unknown_keys_and_stay_frozen():
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        Config.model_validate({"sede": 1})
    with pytest.raises(ValidationError, match="frozen"):
        Config().seed = 2  # type: ignore[misc]


def test_a_plain_model_takes_nan_which_is_why_configurations_are_strict():
    class Loose(BaseModel):
        rate: float = 0.0

    assert math.isnan(Loose.model_validate({"rate": math.nan}).rate)
