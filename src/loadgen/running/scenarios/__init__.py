"""Scenarios: how a workload is driven (tailing, catch-up and mixed, rate control, outages)."""
