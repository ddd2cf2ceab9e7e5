"""The HTTP side against a real InfluxDB."""

import pytest
from rnf_monitoring.client import InfluxClient, QueryError
from rnf_monitoring.influx import InfluxTarget, Outcome


def test_the_first_write_creates_the_database(influxdb, database, count_points):
    client = influxdb.client(database)
    result = client.write(["m,ue=1 v=1i 1000000000", "m,ue=1 v=2i 2000000000"])
    assert result.outcome is Outcome.WRITTEN
    assert count_points(client, "m", "v") == 2


def test_a_field_type_conflict_rejects_only_the_conflicting_line(influxdb, database, count_points):
    client = influxdb.client(database)
    client.write(["m v=1i 1"])
    result = client.write(["m v=2i 2", 'm v="text" 3'])
    assert (result.outcome, result.rejected) == (Outcome.REJECTED, 1)
    assert "field type conflict" in result.message
    assert count_points(client, "m", "v") == 2


def test_an_unreachable_server_is_retried_not_rejected(unreachable_url):
    client = InfluxClient(InfluxTarget(unreachable_url), timeout_s=1)
    result = client.write(["m v=1i 1"])
    assert result.outcome is Outcome.RETRY
    assert "refused" in result.message


def test_a_bad_statement_is_a_query_error(influxdb, database):
    with pytest.raises(QueryError, match="error parsing query"):
        influxdb.client(database).query("SELEKT 1")
