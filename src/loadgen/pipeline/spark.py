"""Starting Spark for the pipeline: embedded ``local[*]`` by default, any ``--master`` on request.

A local master, or a cluster master on a loopback address, keeps the driver on loopback
(driver host, bind address and ``SPARK_LOCAL_IP``), so such a job never listens on the network.

The executors run the job's Python tasks (:mod:`loadgen.pipeline.tasks`, shipped with the job
by :mod:`loadgen.pipeline.ship`): they need Python with numpy, pyarrow and pandas, and access to
the landing directory and ``OUT``, but no loadgen. Spark starts that Python as
``PYSPARK_PYTHON``, else as the ``python3`` on ``PATH``, which for loadgen run by its full path
(pipx, a systemd unit, cron) is not the one it runs in: so a local master's workers run
loadgen's own interpreter unless ``PYSPARK_PYTHON`` is set (:func:`workers_python`), and an
executors' Python that lacks a module, or does not start, is named in one line
(:func:`executor_python_problem`).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from loadgen.base.errors import ConfigError, LoadgenError, MissingExtra

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


DEFAULT_MASTER = "local[*]"
LOG_CONFIG = Path(__file__).resolve().with_name("log4j2.properties")
"""Spark's own log at ERROR: its startup chatter would bury the job's lines."""
LEAN_JVM = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:CICompilerCount=1"]
"""The JVMs with the quick JIT only and one GC thread: the full JIT about doubles the JVM CPU
of a micro-batch's jobs, most of it the C2 compiler's (bench/results/pipeline.md "Spark
pipeline: live-job cost")."""
SETTINGS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # the query command's reports shuffle a handful of rows: two partitions are plenty
    "spark.sql.shuffle.partitions": "2",
    # above 32 paths Spark lists files with a distributed job; ~1 s instead of ~19 s per batch
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "1000000",
    "spark.sql.session.timeZone": "UTC",
    # a micro-batch's cached rows live for that batch only, and are mostly encoded histograms
    # that column compression cannot shrink: compressing them cost CPU for nothing
    "spark.sql.inMemoryColumnarStorage.compressed": "false",
    "spark.driver.extraJavaOptions": " ".join(
        [f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}", *LEAN_JVM]
    ),
    "spark.executor.extraJavaOptions": " ".join(LEAN_JVM),
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


TASK_PACKAGES = ("numpy", "pyarrow", "pandas")
"""What the executors' Python needs for the job's tasks (the ``spark`` extra, less pyspark)."""
_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")
_NOT_STARTED = re.compile(r'Cannot run program "([^"]+)": error=\d+, ([^\n]+)')


def workers_python(master: str, environ: Mapping[str, str]) -> str | None:
    """The Python a local master's workers must run: this one (which has the tasks' packages),
    unless ``PYSPARK_PYTHON`` names one. None for a cluster, whose executors may not have this
    path: Spark's own choice stands there."""
    if not is_local(master) or environ.get("PYSPARK_PYTHON") or not sys.executable:
        return None
    return sys.executable


def executor_python_problem(error: str, python: str) -> str | None:
    """A job failure (Spark's message, Java stack traces and all) whose cause is the executors'
    Python ``python``, as one line that says what to do: a module missing there, or no such
    program. None for any other failure."""
    packages = " ".join(TASK_PACKAGES)
    if missing := _MISSING_MODULE.search(error):
        return (
            f"the executors' Python ({python}) has no module '{missing[1]}': install the job's "
            f"task packages there (pip install {packages}), or set PYSPARK_PYTHON to a Python "
            "that has them"
        )
    if not_started := _NOT_STARTED.search(error):
        return (
            f"the executors could not start Python ({not_started[1]}: {not_started[2].strip()}):"
            f" set PYSPARK_PYTHON to a Python there that has {', '.join(TASK_PACKAGES)}"
        )
    return None


def start_session(master: str, app: str, conf: Mapping[str, str] | None = None) -> SparkSession:
    """A Spark session on ``master`` with the pipeline's settings, ``conf`` applied last."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise MissingExtra("pyspark", "spark") from None
    if (python := workers_python(master, os.environ)) is not None:
        os.environ["PYSPARK_PYTHON"] = python  # read when the SparkContext starts
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
    return session
