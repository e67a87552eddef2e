"""RabbitMQ driver (pika): routing keys as partitions, confirms, prefetch, quorum queues."""

from drivers.rabbitmq.driver import Driver

__all__ = ["Driver"]
