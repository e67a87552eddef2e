"""Where Apache Pulsar's jars come from: ``$PULSAR_HOME`` (an unpacked distribution a user
already has), else Maven Central, resolved once into the Maven cache."""

from __future__ import annotations

import re
from pathlib import Path

from loadgen.driver_api.local.java import (
    Distribution,
    ServerJars,
    maven_classpath,
    say_on_stderr,
)

PULSAR_VERSION = "4.2.4"
PULSAR = Distribution(
    kind="pulsar",
    server="Apache Pulsar",
    variable="PULSAR_HOME",
    core=re.compile(r"org\.apache\.pulsar-pulsar-broker-(\d+\.\d+\.\d+)\.jar"),
    sample="lib/org.apache.pulsar-pulsar-broker-*.jar",
    version=PULSAR_VERSION,
    coordinates=(f"org.apache.pulsar:pulsar-broker:{PULSAR_VERSION}",),
    boms=(f"org.apache.pulsar:pulsar:{PULSAR_VERSION}",),
)
"""The broker (``PulsarStandaloneStarter``, BookKeeper's bookies, the RocksDB metadata store),
its versions pinned by Pulsar's own parent POM: resolved without it, Maven mixes OpenTelemetry
1.56 and 1.62 jars and the broker fails at start with a ``NoSuchMethodError``."""


def pulsar_distribution() -> ServerJars:
    """``$PULSAR_HOME``'s jars where it is set, else Apache Pulsar :data:`PULSAR_VERSION` from
    Maven Central."""
    return PULSAR.jars()


PERF_COORDINATES = ("org.apache.pulsar:pulsar-testclient:4.0.8",)
"""pulsar-perf (``PulsarPerfTestTool``): Maven Central has no 4.2.4, and 4.0.8's own
dependencies do not resolve there (``jetcd-core-shaded:4.0.8``), so its jar alone runs on the
broker's classpath."""


def pulsar_perf_classpath() -> list[Path]:
    """pulsar-perf's jar, then the broker's (its client, admin client and picocli)."""
    perf = maven_classpath(
        "pulsar",
        "pulsar-perf-4.0.8",
        PERF_COORDINATES,
        say_on_stderr,
        transitive=False,
    )
    return [*perf, *pulsar_distribution().classpath]
