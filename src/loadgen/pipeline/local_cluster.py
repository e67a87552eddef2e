"""A Spark standalone cluster on 127.0.0.1 from pyspark's own ``spark-class``: one master and
``workers`` workers, each a JVM in its own process group, for ``loadgen brokers up spark`` and
the test suite.

The workers start with this machine's environment; the pipeline's executors run its Python
tasks with ``PYSPARK_PYTHON`` (the job ships their code: :mod:`loadgen.pipeline.ship`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Callable
from functools import partial
from pathlib import Path

from loadgen.base.errors import LocalBrokerError, MissingExtra
from loadgen.driver_api.local.process import (
    LocalBroker,
    claim,
    free_port,
    port_open,
    spawn_logged,
    stop_process,
    wait_until,
)

READY_TIMEOUT_S = 60.0
WORKER_MEMORY = "1g"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def spark_class() -> Path:
    try:
        import pyspark
    except ImportError:
        raise MissingExtra("pyspark", "spark") from None
    script = Path(pyspark.__file__).parent / "bin" / "spark-class"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise LocalBrokerError("spark", "no Java: install a JRE 17+ (java on PATH or JAVA_HOME)")
    return script


def _environment(folder: Path) -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_WORK_DIR": str(folder / "work"),
        "SPARK_LOG_DIR": str(folder / "logs"),
        "SPARK_LOCAL_DIRS": str(folder / "local"),
    }


def _launch(args: list[str], log_path: Path, env: dict[str, str]) -> subprocess.Popen:
    """One JVM in its own session (its executors join its group)."""
    return spawn_logged([str(spark_class()), *args], log_path, detach=True, env=env)


def _wait(
    process: subprocess.Popen, ready: Callable[[], bool], log_path: Path, failure: str
) -> None:
    wait_until(
        "spark",
        ready,
        alive=lambda: process.poll() is None,
        timeout_s=READY_TIMEOUT_S,
        failure=failure,
        log_path=log_path,
        poll_s=0.1,
    )


def start_spark_cluster(
    port: int | None = None, log_dir: Path | None = None, *, detach: bool = False, workers: int = 1
) -> LocalBroker:
    """A master on 127.0.0.1:``port`` (a free one by default) and ``workers`` one-core workers,
    each registered before this returns. ``detach`` is accepted for ``brokers up``: every JVM
    runs in its own session anyway, so it outlives the caller."""
    del detach
    chosen, folder, temporary = claim("spark", port, log_dir)
    for sub in ("work", "logs", "local"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    env = _environment(folder)
    url = f"spark://127.0.0.1:{chosen}"
    master_log = folder / "logs" / f"master-{chosen}.log"
    master = _launch(
        [MASTER_CLASS, "--host", "127.0.0.1", "--port", str(chosen), "--webui-port", "0"],
        master_log,
        env,
    )
    helpers: list[int] = []
    cluster = LocalBroker("spark", url, master.pid, str(master_log), {}, temporary, helpers)
    try:
        failure = f"the Spark master did not start on 127.0.0.1:{chosen}"
        _wait(master, lambda: port_open(chosen), master_log, failure)
        logs = [folder / "logs" / f"worker-{chosen}-{n}.log" for n in range(workers)]
        started = [_launch(_worker_args(url), log, env) for log in logs]
        helpers += [worker.pid for worker in started]
        for log, worker in zip(logs, started, strict=True):
            _wait(worker, partial(_registered, log), log, "a Spark worker did not register")
    except BaseException:
        stop_cluster(cluster)
        raise
    return cluster


REGISTERED = "Successfully registered with master"


def _worker_args(master_url: str) -> list[str]:
    """A one-core worker on a free loopback port, no web UI port of its own choosing."""
    port = str(free_port())
    return [WORKER_CLASS, "--host", "127.0.0.1", "--port", port, "--webui-port", "0",
            "--cores", "1", "--memory", WORKER_MEMORY, master_url]  # fmt: skip


def _registered(log_path: Path) -> bool:
    return REGISTERED in log_path.read_text(errors="replace")


def stop_cluster(cluster: LocalBroker, timeout_s: float = 10.0) -> None:
    """Workers first (with their executors: the whole process group), then the master."""
    for pid in (*cluster.helper_pids, cluster.pid):
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        stop_process(pid, timeout_s)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)  # anything the JVM left in its group
    if cluster.temporary_dir:
        shutil.rmtree(cluster.temporary_dir, ignore_errors=True)
