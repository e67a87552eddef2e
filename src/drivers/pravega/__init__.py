"""Pravega driver (the ``pravega`` client); see ``drivers.pravega.driver`` for its semantics."""

from drivers.pravega.driver import Driver

__all__ = ["Driver"]
