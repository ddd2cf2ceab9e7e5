"""Reading configuration files: TOML in, one validated pydantic structure out, errors as `FILE: field: reason`."""

from __future__ import annotations

import tomllib
from collections.abc import Collection
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from rnf_foundation.errors import UserError

Model = TypeVar("Model", bound=BaseModel)


class Strict(BaseModel):
    """The base of every configuration structure: unknown keys are errors, values are frozen, and a float field
    refuses NaN and infinity by type (a field that means infinity says so with `Field(allow_inf_nan=True)`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def format_validation_error(source: str, error: ValidationError, hidden: Collection[str] = ()) -> str:
    """One line per problem: `source: field.path: message`.

    `hidden` are union tags (e.g. a discriminated union's member names) left out of the field path.
    """
    lines = []
    for problem in error.errors():
        location = ".".join(
            f"[{part}]" if isinstance(part, int) else str(part)
            for part in problem["loc"]
            if part not in hidden and not str(part).startswith("function-")
        ).replace(".[", "[")
        message = problem["msg"].removeprefix("Value error, ")
        lines.append(f"{source}: {location or '(top level)'}: {message}")
    return "\n".join(lines)


def file_or_generator(data: Any) -> str | None:
    """Discriminator of a trace union: `file` when the table names a file, else its `generator`."""
    if isinstance(data, BaseModel):
        return getattr(data, "generator", "file")
    if not isinstance(data, dict):
        return None
    return "file" if "file" in data else data.get("generator")


def read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"{path}: cannot read: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise UserError(f"{path}: not valid TOML: {error}") from None


def resolve_paths(data: Any, base: Path) -> Any:
    """Every `file = ...` in a configuration, relative to the configuration file's folder."""
    if isinstance(data, dict):
        return {
            key: (str(base / value) if key == "file" and isinstance(value, str) else resolve_paths(value, base))
            for key, value in data.items()
        }
    if isinstance(data, list):
        return [resolve_paths(value, base) for value in data]
    return data


def validate(model: type[Model], data: Any, source: str, hidden: Collection[str] = ()) -> Model:
    """`model` from `data`, or a UserError listing every problem as `source: field: reason`."""
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise UserError(format_validation_error(source, error, hidden)) from None
