"""Starting Spark for the pipeline: embedded ``local[*]`` by default, any ``--master`` on request.

A local master, or a cluster master on a loopback address, keeps the driver on loopback
(driver host, bind address and ``SPARK_LOCAL_IP``), so such a job never listens on the network.

How executors get the code: the driver ships its own ``loadgen`` package as a zip
(``addPyFile``), which executors put ahead of any installed copy, so they always run the
driver's merge. Its dependencies (numpy, pandas, pyarrow, hdrhistogram) are not shipped: the
executors' Python (``PYSPARK_PYTHON``, this interpreter by default) must have them, as for any
PySpark job. On a cluster the session checks both with a one-task job before the query starts
and names what is missing.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

import loadgen
from loadgen.errors import ConfigError, LoadgenError, MissingExtra

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("loadgen.pipeline")

DEFAULT_MASTER = "local[*]"
LOG_CONFIG = Path(__file__).resolve().with_name("log4j2.properties")
"""Spark's own log at ERROR: its startup chatter would bury the job's lines."""
LEAN_JVM = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:CICompilerCount=1"]
"""The driver JVM with the quick JIT only and one GC thread: its micro-batches are small, and
the C2 compiler and parallel GC threads were most of its CPU next to a run (bench/RESULTS.md)."""
SETTINGS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # a handful of rows per interval: two shuffle (and state store) partitions are plenty
    "spark.sql.shuffle.partitions": "2",
    # above 32 paths Spark lists files with a distributed job; ~1 s instead of ~19 s per batch
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "1000000",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.extraJavaOptions": " ".join(
        [f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}", *LEAN_JVM]
    ),
}
LOOPBACK = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}


def parse_conf(pairs: tuple[str, ...]) -> dict[str, str]:
    """``--conf KEY=VALUE`` flags as a mapping; a flag without ``=`` is a ConfigError."""
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(
                "expected KEY=VALUE", path="--conf", value=pair, allowed="spark.some.key=value"
            )
        conf[key.strip()] = value
    return conf


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def on_loopback(master: str) -> bool:
    """An embedded master, or one at 127.x / localhost: the driver can stay on loopback."""
    host = urlparse(master).hostname or ""
    return is_local(master) or host == "localhost" or host.startswith("127.")


def start_session(master: str, app: str, conf: Mapping[str, str] | None = None) -> SparkSession:
    """A Spark session on ``master`` with the pipeline's settings, ``conf`` applied last."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise MissingExtra("pyspark", "spark") from None
    # the executors' Python must be this one (the one with loadgen, numpy and pyarrow)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings = dict(SETTINGS)
    if on_loopback(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        settings |= LOOPBACK
    settings |= dict(conf or {})
    builder = SparkSession.builder.master(master).appName(app)
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
    except Exception as error:  # Java missing, a bad master URL, a cluster that refuses us
        raise LoadgenError(f"could not start Spark on master {master!r}: {error}") from error
    session.sparkContext.setLogLevel("ERROR")
    if not is_local(master):
        session.sparkContext.addPyFile(str(_package_zip()))
        _check_executors(session, master)
    return session


def _executor_imports(_: object) -> str:
    """Run on an executor: import what the job's tasks import; say where loadgen came from."""
    import hdrh  # noqa: F401
    import numpy  # noqa: F401
    import pandas  # noqa: F401
    import pyarrow  # noqa: F401

    import loadgen.pipeline.ingest

    return str(loadgen.__file__)


def _check_executors(session: SparkSession, master: str) -> None:
    """Fail before the query starts, naming the missing piece, if executors cannot run it."""
    try:
        (origin,) = session.sparkContext.parallelize([0], 1).map(_executor_imports).collect()
    except Exception as error:
        cause = [line for line in str(error).splitlines() if "Error" in line][-1:]
        session.stop()
        raise LoadgenError(
            f"the executors of {master} cannot run the pipeline: {' '.join(cause) or error}. "
            "Their Python (PYSPARK_PYTHON) needs numpy, pandas, pyarrow and hdrhistogram "
            "(pip install 'loadgen[spark]' there); loadgen itself is shipped by the driver"
        ) from None
    log.info("executors run loadgen from %s", origin)


def _package_zip() -> Path:
    """The ``loadgen`` package as a zip for executors that do not have it installed."""
    source = Path(loadgen.__file__).resolve().parent
    target = Path(tempfile.mkdtemp(prefix="loadgen-spark-")) / "loadgen.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in source.rglob("*.py"):
            archive.write(path, Path("loadgen") / path.relative_to(source))
    return target
