"""Scenarios: how a workload is driven (tailing now; catch-up, mixed and sweeps build on it)."""
