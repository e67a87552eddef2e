"""Where Apache Kafka's jars come from: ``$KAFKA_HOME`` (an unpacked distribution a user
already has), else Maven Central, resolved once into the Maven cache."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from loadgen.base.errors import LocalBrokerSetupError
from loadgen.driver_api.local.java import maven_classpath

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
CORE_JAR = re.compile(r"kafka_2\.1[23]-(\d+\.\d+\.\d+)\.jar")


@dataclass(frozen=True)
class KafkaDistribution:
    version: str
    classpath: tuple[Path, ...]
    source: str
    """``KAFKA_HOME=...`` or ``Maven Central``: where the jars came from, for messages."""

    @property
    def classpath_text(self) -> str:
        return os.pathsep.join(map(str, self.classpath))


def kafka_distribution() -> KafkaDistribution:
    """``$KAFKA_HOME``'s jars where it is set, else Apache Kafka :data:`KAFKA_VERSION` from
    Maven Central (a line on stderr the first time it is fetched)."""
    home = os.environ.get("KAFKA_HOME")
    if home:
        return from_home(Path(home))
    jars = maven_classpath(
        "kafka",
        f"kafka-{KAFKA_VERSION}",
        COORDINATES,
        lambda line: print(line, file=sys.stderr, flush=True),
    )
    return KafkaDistribution(KAFKA_VERSION, tuple(jars), "Maven Central")


def from_home(home: Path) -> KafkaDistribution:
    """The distribution unpacked at ``home`` (its ``libs/`` folder), or a setup error saying
    what to set instead."""
    jars = sorted((home / "libs").glob("*.jar"))
    versions = [match.group(1) for jar in jars if (match := CORE_JAR.fullmatch(jar.name))]
    if not versions:
        raise LocalBrokerSetupError(
            "kafka",
            f"KAFKA_HOME={home} is not an Apache Kafka distribution (no libs/kafka_2.13-*.jar): "
            f"point it at an unpacked kafka_2.13-*.tgz, or unset it to use Apache Kafka "
            f"{KAFKA_VERSION} from Maven Central",
        )
    return KafkaDistribution(versions[0], tuple(jars), f"KAFKA_HOME={home}")
