"""Starting Spark for the pipeline: embedded ``local[*]`` by default, any ``--master`` on request.

A local master is kept on loopback (driver host, bind address and ``SPARK_LOCAL_IP``), so an
embedded job never listens on the network. On another master the executors need loadgen's merge
code: it is shipped as a zip of the ``loadgen`` package (its own dependencies — numpy, pandas,
pyarrow, hdrhistogram — must be installed there, as for any PySpark job).
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

import loadgen
from loadgen.errors import ConfigError, LoadgenError, MissingExtra

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("loadgen.pipeline")

DEFAULT_MASTER = "local[*]"
LOG_CONFIG = Path(__file__).with_name("log4j2.properties")
"""Spark's own log at ERROR: its startup chatter would bury the job's lines."""
SETTINGS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # a handful of rows per interval: two shuffle (and state store) partitions are plenty
    "spark.sql.shuffle.partitions": "2",
    # above 32 paths Spark lists files with a distributed job; ~1 s instead of ~19 s per batch
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "1000000",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}",
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
    if is_local(master):
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
    return session


def _package_zip() -> Path:
    """The ``loadgen`` package as a zip for executors that do not have it installed."""
    source = Path(loadgen.__file__).resolve().parent
    target = Path(tempfile.mkdtemp(prefix="loadgen-spark-")) / "loadgen.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in source.rglob("*.py"):
            archive.write(path, Path("loadgen") / path.relative_to(source))
    return target
