"""Pulsar driver (pulsar-client); see ``drivers.pulsar.driver`` for its semantics."""

from drivers.pulsar.driver import Driver

__all__ = ["Driver"]
