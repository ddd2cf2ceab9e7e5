"""`--influx` refuses a URL whose port is out of range or malformed, in one line, exit 2, before anything is read
or written."""

import pytest
from rnf_cli.main import main


def rnf(capsys, *args: str) -> tuple[int, list[str]]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    return exit_info.value.code, capsys.readouterr().err.splitlines()


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1:99999", "port 99999 is above 65535"),
        ("http://127.0.0.1:-1", "port '-1' is not a number 0-65535"),
        ("http://[::1]:8086x", "port '8086x' is not a number 0-65535"),
        ("http://127.0.0.1:", "port '' is not a number 0-65535"),
        ("foo://bar", "expected http://HOST:PORT"),
        ("", "expected http://HOST:PORT"),
        ("garbage", "expected http://HOST:PORT"),
        ("tcp://127.0.0.1", "expected http://HOST:PORT"),
    ],
)
def test_a_bad_influx_url_is_one_line_naming_it(capsys, monkeypatch, tmp_path, url, reason):
    for name in ("INFLUX_TOKEN", "INFLUX_TOKEN_FILE", "INFLUX_USERNAME", "INFLUX_PASSWORD", "INFLUX_PASSWORD_FILE"):
        monkeypatch.delenv(name, raising=False)
    code, lines = rnf(capsys, "record", "import", str(tmp_path), "--influx", url)
    assert code == 2
    assert lines == [f"Error: --influx {url}: {reason}"] or (len(lines) == 1 and reason in lines[0])
    assert list(tmp_path.iterdir()) == []
