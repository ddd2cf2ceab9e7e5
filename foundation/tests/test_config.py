"""Reading configuration files: TOML errors, path resolution and validation errors, each as `FILE: field: reason`."""

from pathlib import Path

import pytest
from pydantic import Field
from rnf_foundation.config import Strict, read_toml, resolve_paths, validate
from rnf_foundation.errors import UserError


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "no such file"),
        (b"a = \n", "not valid TOML"),
        (b"\xff\xfe", "cannot read"),
        ("DIRECTORY", "cannot read"),
    ],
)
def test_read_toml_errors_are_one_line_naming_the_file(tmp_path, content, reason):
    path = tmp_path / "c.toml"
    if content == "DIRECTORY":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(UserError) as raised:
        read_toml(path)
    assert raised.value.message.startswith(f"{path}: {reason}") and "\n" not in raised.value.message
    assert raised.value.exit_code == 2


def test_file_keys_resolve_from_the_configuration_folder():
    data = {"file": "a.csv", "ues": [{"trace": {"file": "/abs/b.csv"}}, {"trace": {"generator": "x"}}], "name": "f"}
    assert resolve_paths(data, Path("/scenarios")) == {
        "file": "/scenarios/a.csv",
        "ues": [{"trace": {"file": "/abs/b.csv"}}, {"trace": {"generator": "x"}}],
        "name": "f",
    }


class Inner(Strict):
    rate: float = Field(gt=0)


class Outer(Strict):
    inner: list[Inner]


def test_validation_errors_name_source_and_field_one_line_each():
    with pytest.raises(UserError) as raised:
        validate(Outer, {"inner": [{"rate": 1}, {"rate": -1}, {"rate": float("nan")}], "x": 1}, "cell.toml")
    assert raised.value.message.splitlines() == [
        "cell.toml: inner[1].rate: Input should be greater than 0",
        "cell.toml: inner[2].rate: Input should be a finite number",
        "cell.toml: x: Extra inputs are not permitted",
    ]
