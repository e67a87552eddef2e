"""Where Apache Kafka's jars come from: ``$KAFKA_HOME`` (an unpacked distribution a user
already has), else Maven Central, resolved once into the Maven cache."""

from __future__ import annotations

import re

from loadgen.driver_api.local.java import Distribution, ServerJars

KAFKA_VERSION = "4.4.0"
COORDINATES = (
    f"org.apache.kafka:kafka_2.13:{KAFKA_VERSION}",
    f"org.apache.kafka:kafka-tools:{KAFKA_VERSION}",
    "org.slf4j:slf4j-api:2.0.17",
    "org.apache.logging.log4j:log4j-slf4j2-impl:2.25.5",
)
"""The broker and its tools (``kafka.Kafka``, ``kafka.tools.StorageTool``,
``org.apache.kafka.tools.ProducerPerformance``), with the log4j 2 binding the distribution
ships (the Maven artifacts name no SLF4J binding)."""
KAFKA = Distribution(
    kind="kafka",
    server="Apache Kafka",
    variable="KAFKA_HOME",
    core=re.compile(r"kafka_2\.1[23]-(\d+\.\d+\.\d+)\.jar"),
    sample="libs/kafka_2.13-*.jar",
    version=KAFKA_VERSION,
    coordinates=COORDINATES,
)


def kafka_distribution() -> ServerJars:
    """``$KAFKA_HOME``'s jars where it is set, else Apache Kafka :data:`KAFKA_VERSION` from
    Maven Central."""
    return KAFKA.jars()
