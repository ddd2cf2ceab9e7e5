"""Experiments: scenario files, the runner, metrics and reports."""
