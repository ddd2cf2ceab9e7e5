"""Live monitoring: runs recorded to InfluxDB (v1 `/write` API), recorded runs imported, Grafana dashboards as code."""
