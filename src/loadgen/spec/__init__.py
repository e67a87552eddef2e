"""Workload files: OMB's YAML format, validated with precise errors, and the units, durations
and model checks driver files use too."""

from __future__ import annotations

from loadgen.spec.durations import parse_duration
from loadgen.spec.loader import load_yaml
from loadgen.spec.model import parse_model
from loadgen.spec.workload import KeyDistributor, Workload, load_workload, resolve_payload_file

__all__ = [
    "KeyDistributor",
    "Workload",
    "load_workload",
    "load_yaml",
    "parse_duration",
    "parse_model",
    "resolve_payload_file",
]
