"""The JVM a local broker's own server runs on, and its jars from Maven Central.

Upstream servers (Apache Kafka, Pulsar, Pravega) are published to Maven Central: a starter names
their coordinates and gets a classpath, resolved once with ``mvn`` into the user's Maven cache
(``~/.m2``) and remembered in loadgen's cache folder, so every later start runs offline and
without Maven. Every failure is one line naming what is missing and what to install or set.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from loadgen.base.errors import LocalBrokerError, LocalBrokerSetupError

JAVA_VERSION_TIMEOUT_S = 20.0
RESOLVE_TIMEOUT_S = 600.0
"""Resolving a server's jars the first time: tens of megabytes from Maven Central."""
ALONE = (
    "<exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions>"
)
"""A dependency's jar without what it depends on."""
UNREACHABLE_SIGNS = ("Could not transfer", "Unknown host", "Connection refused", "timed out")
"""What ``mvn`` prints when it could not reach a repository (as opposed to a missing artifact)."""


@dataclass(frozen=True)
class ServerJars:
    """An upstream server's jars: a version, its classpath and where it came from."""

    version: str
    classpath: tuple[Path, ...]
    source: str
    """``KAFKA_HOME=...`` or ``Maven Central``: where the jars came from, for messages."""

    @property
    def classpath_text(self) -> str:
        return os.pathsep.join(map(str, self.classpath))


@dataclass(frozen=True)
class Distribution:
    """How to recognise a server's unpacked distribution and what to use without one."""

    kind: str
    server: str
    """``Apache Kafka``: for messages."""
    variable: str
    """``KAFKA_HOME``: the variable naming an unpacked distribution."""
    core: re.Pattern[str]
    """The server's own jar, its version in group 1."""
    sample: str
    """``libs/kafka_2.13-*.jar``: the jar ``core`` matches, for messages."""
    version: str
    """The version resolved from Maven Central when ``variable`` is unset."""
    coordinates: tuple[str, ...]
    """``group:artifact:version`` of the server's jars on Maven Central."""
    boms: tuple[str, ...] = ()
    """POMs that pin what the coordinates depend on (see :func:`maven_classpath`)."""

    def jars(self) -> ServerJars:
        """``$variable``'s jars where it is set, else the coordinates' from Maven Central (a
        line on stderr the first time they are fetched)."""
        home = os.environ.get(self.variable)
        if home:
            return self.from_home(Path(home))
        found = maven_classpath(
            self.kind,
            f"{self.kind}-{self.version}",
            self.coordinates,
            say_on_stderr,
            self.boms,
        )
        return ServerJars(self.version, tuple(found), "Maven Central")

    def from_home(self, home: Path) -> ServerJars:
        """The jars of the distribution unpacked at ``home`` (its ``libs/`` or ``lib/``), or
        a setup error saying what to set instead."""
        found = sorted(jar for folder in ("libs", "lib") for jar in (home / folder).glob("*.jar"))
        versions = [match.group(1) for jar in found if (match := self.core.fullmatch(jar.name))]
        if not versions:
            raise LocalBrokerSetupError(
                self.kind,
                f"{self.variable}={home} is not an unpacked {self.server} (no {self.sample}): "
                f"point it at one, or unset it to use {self.server} {self.version} from Maven "
                "Central",
            )
        return ServerJars(versions[0], tuple(found), f"{self.variable}={home}")


def say_on_stderr(line: str) -> None:
    """Where a resolution's one line goes: stderr, so stdout keeps only what a command prints."""
    print(line, file=sys.stderr, flush=True)


def java_binary(kind: str, minimum: int = 17) -> Path:
    """``$JAVA_HOME/bin/java``, else ``java`` on ``PATH``, checked to be Java ``minimum`` or
    later."""
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else shutil.which("java")
    if found is None or not Path(found).exists():
        where = f"JAVA_HOME={home} has no bin/java" if home else "no java on PATH"
        raise LocalBrokerSetupError(
            kind, f"{where}: install Java {minimum} or later, or set JAVA_HOME to one"
        )
    version = java_major_version(Path(found))
    if version < minimum:
        raise LocalBrokerSetupError(
            kind, f"{found} is Java {version}; it needs {minimum} or later (set JAVA_HOME)"
        )
    return Path(found)


def java_major_version(java: Path) -> int:
    """The feature release of ``java`` (17 for ``17.0.15``, 8 for ``1.8.0_412``)."""
    shown = subprocess.run(
        [str(java), "-version"], capture_output=True, text=True, timeout=JAVA_VERSION_TIMEOUT_S
    ).stderr
    match = re.search(r'version "(\d+)(?:\.(\d+))?', shown)
    if match is None:
        return 0
    major, minor = int(match.group(1)), int(match.group(2) or 0)
    return minor if major == 1 else major


def cache_dir() -> Path:
    """loadgen's cache folder: ``$XDG_CACHE_HOME/loadgen`` or ``~/.cache/loadgen``."""
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "loadgen"


def maven_classpath(
    kind: str,
    name: str,
    coordinates: Sequence[str],
    say: Callable[[str], None],
    boms: Sequence[str] = (),
    *,
    transitive: bool = True,
) -> list[Path]:
    """The jars of ``coordinates`` (``group:artifact:version``) and everything they depend on,
    resolved by ``mvn`` the first time (``say`` is told so) and read from the cache after,
    as long as every jar is still there. ``name`` names the cache entry (``kafka-4.4.0``).
    ``boms`` (``group:artifact:version`` of POMs) pin the versions of what the coordinates
    depend on, as the project's own build pins them: Maven's nearest-wins choice otherwise
    mixes versions (Pulsar's OpenTelemetry jars, seen failing at start). Not ``transitive``:
    the coordinates' own jars alone (a tool run on a server's classpath)."""
    folder = cache_dir() / "maven" / name
    listed = folder / "classpath.txt"
    if listed.exists():
        jars = [Path(jar) for jar in listed.read_text().split(os.pathsep) if jar]
        if jars and all(jar.exists() for jar in jars):
            return jars
    mvn = shutil.which("mvn")
    if mvn is None:
        raise LocalBrokerSetupError(
            kind, f"no mvn on PATH to fetch {name} from Maven Central: install Maven"
        )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pom.xml").write_text(_pom(name, coordinates, boms, transitive))
    say(f"resolving {name} from Maven Central into the Maven cache (once; later starts offline)")
    _resolve(kind, name, mvn, folder, listed)
    return [Path(jar) for jar in listed.read_text().split(os.pathsep) if jar]


def _resolve(kind: str, name: str, mvn: str, folder: Path, listed: Path) -> None:
    command = [
        mvn, "-B", "-q", "dependency:build-classpath", f"-Dmdep.outputFile={listed}",
    ]  # fmt: skip
    try:
        done = subprocess.run(
            command, cwd=folder, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        raise LocalBrokerError(
            kind, f"mvn did not resolve {name} within {RESOLVE_TIMEOUT_S:.0f} s"
        ) from None
    if done.returncode == 0 and listed.exists():
        return
    listed.unlink(missing_ok=True)
    shown = done.stdout + done.stderr
    first = next((line for line in shown.splitlines() if "[ERROR]" in line), shown.strip())
    if any(sign in shown for sign in UNREACHABLE_SIGNS):
        raise LocalBrokerError(
            kind, f"Maven Central unreachable while resolving {name}: {first[:300]}"
        )
    raise LocalBrokerSetupError(kind, f"mvn could not resolve {name}: {first[:300]}")


def _pom(
    name: str, coordinates: Sequence[str], boms: Sequence[str] = (), transitive: bool = True
) -> str:
    """A project that only depends on ``coordinates``, its versions managed by ``boms``: what
    ``dependency:build-classpath`` resolves."""
    alone = "" if transitive else ALONE
    dependencies = "".join(_dependency(coordinate, alone) for coordinate in coordinates)
    imports = "".join(_dependency(bom, "<type>pom</type><scope>import</scope>") for bom in boms)
    managed = (
        f"<dependencyManagement><dependencies>\n{imports}</dependencies></dependencyManagement>\n"
        if boms
        else ""
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "<modelVersion>4.0.0</modelVersion>\n"
        f"<groupId>loadgen.local</groupId><artifactId>{name}</artifactId><version>1</version>\n"
        "<packaging>pom</packaging>\n"
        f"{managed}<dependencies>\n{dependencies}</dependencies>\n</project>\n"
    )


def _dependency(coordinate: str, extra: str = "") -> str:
    group, artifact, version = coordinate.split(":")
    return (
        f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
        f"<version>{version}</version>{extra}</dependency>\n"
    )


def log4j2_properties(log_path: Path) -> str:
    """log4j 2 for a server JVM: its log in one file, INFO and up (the distributions'
    levels)."""
    return (
        "status = warn\n"
        "appender.file.type = File\n"
        "appender.file.name = file\n"
        f"appender.file.fileName = {log_path}\n"
        "appender.file.layout.type = PatternLayout\n"
        "appender.file.layout.pattern = [%d] %p %m (%c)%n\n"
        "rootLogger.level = info\n"
        "rootLogger.appenderRef.file.ref = file\n"
    )
