"""Kafka driver (confluent-kafka); see ``drivers.kafka.driver`` for its semantics."""

from drivers.kafka.driver import Driver

__all__ = ["Driver"]
