"""The v1 API as data: URLs, credentials, what a response means."""

import base64

import pytest
from rnf_foundation.errors import UserError
from rnf_monitoring.influx import (
    Credentials,
    Outcome,
    backoff_s,
    classify,
    create_database,
    credentials_from_environment,
    parse_url,
    rejected_lines,
)


def test_a_bare_url_writes_to_the_default_database_in_nanoseconds():
    target = parse_url("http://127.0.0.1:8086", {})
    assert target.write_url() == "http://127.0.0.1:8086/write?db=rnf&precision=ns"
    assert target.query_url() == "http://127.0.0.1:8086/query"


def test_database_comes_from_the_option_before_the_url():
    assert parse_url("http://h:8086/?db=fromurl&rp=week", {}).write_url() == (
        "http://h:8086/write?db=fromurl&precision=ns&rp=week"
    )
    assert parse_url("http://h:8086/?db=fromurl", {}, database="option").database == "option"


def test_a_path_prefix_is_kept_for_servers_behind_a_reverse_proxy():
    assert parse_url("https://example.org/influx/", {}).write_url().startswith("https://example.org/influx/write?")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("127.0.0.1:8086", "expected http://HOST:PORT"),
        ("ftp://h:21", "expected http://HOST:PORT"),
        ("http://user:secret@h:8086", "no credentials in the URL"),
        ("http://h:8086/?database=x", "unknown parameter 'database'"),
        ("http://h:8086/?db=", "empty database name"),
    ],
)
def test_malformed_urls_are_user_errors(url, message):
    with pytest.raises(UserError, match=message):
        parse_url(url, {})


def test_no_credentials_means_no_authorization_header():
    assert credentials_from_environment({}).headers() == {}


def test_a_token_is_sent_as_a_token():
    credentials = credentials_from_environment({"INFLUX_TOKEN": "abc"})
    assert credentials.headers() == {"Authorization": "Token abc"}
    assert "abc" not in repr(credentials)


def test_username_and_password_are_sent_as_basic_authentication():
    headers = credentials_from_environment({"INFLUX_USERNAME": "rnf", "INFLUX_PASSWORD": "pw"}).headers()
    assert headers == {"Authorization": "Basic " + base64.b64encode(b"rnf:pw").decode()}


def test_secrets_can_come_from_files(tmp_path):
    (tmp_path / "token").write_text("from-file\n")
    credentials = credentials_from_environment({"INFLUX_TOKEN_FILE": str(tmp_path / "token")})
    assert credentials == Credentials(token="from-file")


def test_a_missing_secret_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match=r"INFLUX_PASSWORD_FILE: .*missing"):
        credentials_from_environment({"INFLUX_USERNAME": "u", "INFLUX_PASSWORD_FILE": str(tmp_path / "missing")})


def test_a_token_and_a_password_together_are_ambiguous():
    with pytest.raises(UserError, match="either INFLUX_TOKEN or"):
        credentials_from_environment({"INFLUX_TOKEN": "t", "INFLUX_PASSWORD": "p"})
    with pytest.raises(UserError, match="INFLUX_TOKEN or INFLUX_TOKEN_FILE"):
        credentials_from_environment({"INFLUX_TOKEN": "t", "INFLUX_TOKEN_FILE": "/x"})


@pytest.mark.parametrize(
    ("status", "body", "outcome"),
    [
        (204, "", Outcome.WRITTEN),
        (None, "connection refused", Outcome.RETRY),
        (500, "timeout", Outcome.RETRY),
        (503, "", Outcome.RETRY),
        (429, "", Outcome.RETRY),
        (404, '{"error":"database not found: \\"rnf\\""}', Outcome.NO_DATABASE),
        (404, '{"code":"not found","message":"bucket \\"rnf\\" not found"}', Outcome.REJECTED),
        (400, '{"error":"partial write: field type conflict dropped=2"}', Outcome.REJECTED),
        (401, '{"error":"authorization failed"}', Outcome.REJECTED),
    ],
)
def test_responses_are_written_retried_or_rejected(status, body, outcome):
    assert classify(status, body) is outcome


def test_a_partial_write_rejects_only_the_lines_it_names():
    assert rejected_lines('{"error":"partial write: field type conflict: ... dropped=3"}', 10) == 3
    assert rejected_lines('{"error":"unable to parse"}', 10) == 10


def test_backoff_doubles_from_a_tenth_of_a_second_up_to_two_seconds():
    assert [backoff_s(n) for n in (1, 2, 3, 5, 6, 50)] == [0.1, 0.2, 0.4, 1.6, 2.0, 2.0]


def test_database_names_are_quoted():
    assert create_database('we"ird') == 'CREATE DATABASE "we\\"ird"'
