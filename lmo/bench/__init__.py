"""Benchmarks for lmo (run `python -m lmo.bench --help`). Never imported by tests for timing."""
