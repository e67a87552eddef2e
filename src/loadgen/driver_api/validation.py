"""``loadgen validate``: a workload or driver file checked as a run would, without connecting."""

from __future__ import annotations

from pathlib import Path

from loadgen.driver_api import load_driver_class
from loadgen.driver_api.driver_file import is_driver_file, spec_from_dict
from loadgen.spec import Workload, parse_model, resolve_payload_file
from loadgen.spec.loader import load_yaml


def validate_file(path: str | Path, *, lenient: bool = False) -> str:
    """Check one file as a run would, without connecting to anything.

    A workload's payload file (when it uses one) must exist with the right length; a driver
    file's own section is checked by its driver's ``validate_config`` classmethod.
    Returns ``"workload"`` or ``"driver"``.
    """
    data = load_yaml(path)
    if not is_driver_file(data):
        workload = parse_model(Workload, data, file=str(path), lenient=lenient)
        if workload.payload_file and not workload.use_randomized_payloads:
            resolve_payload_file(workload, path)
        return "workload"
    spec = spec_from_dict(data, source=str(path), lenient=lenient)
    load_driver_class(spec).validate_config(spec)
    return "driver"
