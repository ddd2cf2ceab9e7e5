"""The virtual cell: namespaces, traces, the Rust datapath, and telemetry published from what it did."""
