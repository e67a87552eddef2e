"""Where Pravega's jars come from: ``$PRAVEGA_HOME`` (an unpacked Pravega distribution a user
already has, its ``lib/``), else ``pravega-standalone`` from Maven Central, resolved once into
the Maven cache."""

from __future__ import annotations

import re
from dataclasses import replace

from loadgen.driver_api.local.java import Distribution, ServerJars

PRAVEGA_VERSION = "0.13.0"
COORDINATES = (f"io.pravega:pravega-standalone:{PRAVEGA_VERSION}",)
"""Pravega standalone (``io.pravega.local.LocalPravegaEmulator``): controller, segment store and
ZooKeeper in one JVM, with the logback binding the distribution ships."""
BOMS = (
    "io.netty:netty-bom:4.1.86.Final",
    "com.google.protobuf:protobuf-bom:3.21.7",
    "com.fasterxml.jackson:jackson-bom:2.14.1",
)
"""The versions Pravega 0.13.0's build takes (its gradle.properties). Without them Maven's
nearest-wins picks Hadoop's protobuf 2.5.0 (the HDFS emulator's dependency) and the controller
fails at start: ``NoClassDefFoundError: com/google/protobuf/GeneratedMessageV3``."""
NOT_SHIPPED = re.compile(r"slf4j-(reload4j|log4j12)-.*|jersey-(core|server)-1\..*|jsr311-api-.*")
"""Jars Hadoop brings that Pravega's distribution leaves out: a second SLF4J binding (the log
would follow log4j's settings instead of ours) and JAX-RS 1 beside the REST server's JAX-RS 2."""
PRAVEGA = Distribution(
    kind="pravega",
    server="Pravega",
    variable="PRAVEGA_HOME",
    core=re.compile(r"pravega-standalone-(\d+\.\d+\.\d+)\.jar"),
    sample="lib/pravega-standalone-*.jar",
    version=PRAVEGA_VERSION,
    coordinates=COORDINATES,
    boms=BOMS,
)


def pravega_distribution() -> ServerJars:
    """``$PRAVEGA_HOME``'s jars where it is set, else Pravega :data:`PRAVEGA_VERSION` from
    Maven Central; either without :data:`NOT_SHIPPED`."""
    jars = PRAVEGA.jars()
    kept = tuple(jar for jar in jars.classpath if not NOT_SHIPPED.fullmatch(jar.name))
    return replace(jars, classpath=kept)
