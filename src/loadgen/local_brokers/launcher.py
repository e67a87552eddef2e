"""Starting a local broker by kind: the local brokers the installed drivers declare (their
``LocalStarter``), and Spark's standalone cluster for the pipeline. The starter is imported only
when its broker starts, so a kind whose client is not installed costs nothing until asked for."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from loadgen.base.errors import ConfigError
from loadgen.driver_api import LocalStarter, driver_classes
from loadgen.driver_api.local.process import LocalBroker

SPARK_KIND = "spark"
SPARK = LocalStarter("loadgen.pipeline.local_cluster:start_spark_cluster", 7077)
"""Not a driver's broker: a standalone Spark master and worker for the pipeline."""


def starters(*, secure: bool = False) -> dict[str, LocalStarter]:
    """Every local broker on offer, by kind: those the installed drivers declare, and Spark."""
    found = {
        kind: driver.secured_local_broker if secure else driver.local_broker
        for kind, driver in driver_classes().items()
    }
    offered = {kind: starter for kind, starter in found.items() if starter is not None}
    return offered if secure else {**offered, SPARK_KIND: SPARK}


def start(
    kind: str, port: int | None = None, folder: Path | None = None, **options: Any
) -> LocalBroker:
    """Start the local broker of ``kind`` on ``port`` (a free one by default), its data in
    ``folder`` (a temporary one by default); ``options``: what its starter takes besides, e.g.
    ``host``. The caller stops it."""
    return start_with(starter_of(kind, secure=False), port, folder, **options)


def starter_of(kind: str, *, secure: bool) -> LocalStarter:
    if kind not in starters():
        raise ConfigError(
            "no local broker of this kind", path="KIND", value=kind, allowed=sorted(starters())
        )
    offered = starters(secure=secure)
    if kind not in offered:
        raise ConfigError(
            "no secured local broker of this kind",
            path="--secure",
            value=kind,
            allowed=sorted(offered),
        )
    return offered[kind]


def start_with(
    starter: LocalStarter, port: int | None, folder: Path | None, **options: Any
) -> LocalBroker:
    module, _, name = starter.starter.partition(":")
    return getattr(importlib.import_module(module), name)(port, folder, **options)
