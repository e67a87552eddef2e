"""Starting a local broker by kind: the local brokers the installed drivers declare (their
``LocalStarter``), and Spark's standalone cluster for the pipeline. The starter is imported only
when its broker starts, so a kind whose client is not installed costs nothing until asked for."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loadgen.base.errors import ConfigError
from loadgen.driver_api import LocalStarter, driver_classes
from loadgen.driver_api.local.process import LocalBroker

SPARK_KIND = "spark"
SPARK = LocalStarter("loadgen.pipeline.local_cluster:start_spark_cluster", 7077)
"""Not a driver's broker: a standalone Spark master and worker for the pipeline."""


@dataclass(frozen=True)
class Variant:
    """One local broker on offer: a kind's usual one (a stand-in such as tansu), or the
    project's own server (``upstream``), either behind TLS and a login (``secure``)."""

    kind: str
    upstream: bool = False
    secure: bool = False

    @property
    def name(self) -> str:
        """Its state file and data folder name: each variant runs beside the others."""
        return self.kind + "-upstream" * self.upstream + "-secure" * self.secure

    @property
    def shown(self) -> str:
        """How the command line names it: ``kafka --upstream --secure``."""
        return self.kind + " --upstream" * self.upstream + " --secure" * self.secure


def starters(*, secure: bool = False, upstream: bool = False) -> dict[str, LocalStarter]:
    """Every local broker of one variant on offer, by kind: those the installed drivers
    declare, and (the plain variant) Spark."""
    attribute = (
        ("secured_upstream_local_broker" if secure else "upstream_local_broker")
        if upstream
        else ("secured_local_broker" if secure else "local_broker")
    )
    found = {kind: getattr(driver, attribute) for kind, driver in driver_classes().items()}
    offered = {kind: starter for kind, starter in found.items() if starter is not None}
    return {**offered, SPARK_KIND: SPARK} if not (secure or upstream) else offered


def variants(kind: str | None = None) -> list[Variant]:
    """Every variant on offer (of ``kind``), plain ones first."""
    return [
        Variant(name, upstream, secure)
        for upstream in (False, True)
        for secure in (False, True)
        for name in sorted(starters(secure=secure, upstream=upstream))
        if kind in (None, name)
    ]


def start(
    kind: str,
    port: int | None = None,
    folder: Path | None = None,
    *,
    upstream: bool = False,
    **options: Any,
) -> LocalBroker:
    """Start the local broker of ``kind`` (its project's own server when ``upstream``) on
    ``port`` (a free one by default), its data in ``folder`` (a temporary one by default);
    ``options``: what its starter takes besides, e.g. ``host``, ``nodes``. The caller stops
    it."""
    return start_with(starter_of(Variant(kind, upstream=upstream)), port, folder, **options)


def starter_of(variant: Variant) -> LocalStarter:
    if variant.kind not in starters():
        raise ConfigError(
            "no local broker of this kind",
            path="KIND",
            value=variant.kind,
            allowed=sorted(starters()),
        )
    offered = starters(secure=variant.secure, upstream=variant.upstream)
    if variant.kind not in offered:
        flags = variant.shown.removeprefix(variant.kind).strip()
        raise ConfigError(
            f"no local broker of this kind with {flags}",
            path=flags,
            value=variant.kind,
            allowed=sorted(offered),
        )
    return offered[variant.kind]


def start_with(
    starter: LocalStarter, port: int | None, folder: Path | None, **options: Any
) -> LocalBroker:
    return _function(starter)(port, folder, **options)


def takes(starter: LocalStarter, option: str) -> bool:
    """Whether the starter has the keyword ``option`` (``nodes``: it starts clusters)."""
    return option in inspect.signature(_function(starter)).parameters


def _function(starter: LocalStarter) -> Callable[..., LocalBroker]:
    module, _, name = starter.starter.partition(":")
    return getattr(importlib.import_module(module), name)
