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
from collections.abc import Callable, Sequence
from pathlib import Path

from loadgen.base.errors import LocalBrokerError, LocalBrokerSetupError

JAVA_VERSION_TIMEOUT_S = 20.0
RESOLVE_TIMEOUT_S = 600.0
"""Resolving a server's jars the first time: tens of megabytes from Maven Central."""
UNREACHABLE_SIGNS = ("Could not transfer", "Unknown host", "Connection refused", "timed out")
"""What ``mvn`` prints when it could not reach a repository (as opposed to a missing artifact)."""


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
    kind: str, name: str, coordinates: Sequence[str], say: Callable[[str], None]
) -> list[Path]:
    """The jars of ``coordinates`` (``group:artifact:version``) and everything they depend on,
    resolved by ``mvn`` the first time (``say`` is told so) and read from the cache after,
    as long as every jar is still there. ``name`` names the cache entry (``kafka-4.4.0``)."""
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
    (folder / "pom.xml").write_text(_pom(name, coordinates))
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


def _pom(name: str, coordinates: Sequence[str]) -> str:
    """A project that only depends on ``coordinates``: what ``dependency:build-classpath``
    resolves."""
    dependencies = "".join(
        "<dependency><groupId>{}</groupId><artifactId>{}</artifactId>"
        "<version>{}</version></dependency>\n".format(*coordinate.split(":"))
        for coordinate in coordinates
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "<modelVersion>4.0.0</modelVersion>\n"
        f"<groupId>loadgen.local</groupId><artifactId>{name}</artifactId><version>1</version>\n"
        "<packaging>pom</packaging>\n"
        f"<dependencies>\n{dependencies}</dependencies>\n</project>\n"
    )
