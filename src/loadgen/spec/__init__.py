"""Workload and driver configuration: OMB's YAML formats, validated with precise errors."""

from __future__ import annotations

from pathlib import Path

from loadgen.spec.driver_file import is_driver_file, load_driver_spec, spec_from_dict
from loadgen.spec.driver_spec import DriverSpec
from loadgen.spec.durations import parse_duration
from loadgen.spec.loader import load_yaml
from loadgen.spec.model import parse_model
from loadgen.spec.workload import KeyDistributor, Workload, load_workload, resolve_payload_file

__all__ = [
    "DriverSpec",
    "KeyDistributor",
    "Workload",
    "load_driver_spec",
    "load_workload",
    "load_yaml",
    "parse_duration",
    "parse_model",
    "resolve_payload_file",
    "spec_from_dict",
    "validate_file",
]


def validate_file(path: str | Path, *, lenient: bool = False) -> str:
    """Check one file as a run would, without connecting to anything.

    A workload's payload file (when it uses one) must exist with the right length; a driver
    file's own section is checked by its driver's ``validate_config`` classmethod.
    Returns ``"workload"`` or ``"driver"``.
    """
    from loadgen.driver import load_driver_class  # loadgen.driver imports this package

    data = load_yaml(path)
    if not is_driver_file(data):
        workload = parse_model(Workload, data, file=str(path), lenient=lenient)
        if workload.payload_file and not workload.use_randomized_payloads:
            resolve_payload_file(workload, path)
        return "workload"
    spec = spec_from_dict(data, source=str(path), lenient=lenient)
    load_driver_class(spec).validate_config(spec)
    return "driver"
