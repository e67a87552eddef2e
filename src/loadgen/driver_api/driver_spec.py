"""The broker-blind part of a driver YAML: which driver, its display name, and its own section."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class DriverSpec:
    """A parsed driver file.

    ``name`` is OMB's ``name`` (it becomes ``TestResult.driver`` and part of the result file
    name); ``kind`` is the registered driver (``kafka``, ``memory``...), chosen by our
    ``driver:`` key or mapped from OMB's ``driverClass``; ``config`` holds every other top-level
    key, which the driver itself validates; ``source`` is the file path for error messages.
    """

    name: str
    kind: str
    config: Mapping[str, Any] = field(default_factory=dict)
    source: str | None = None
    lenient: bool = False
