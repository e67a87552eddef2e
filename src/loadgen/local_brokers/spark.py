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
import tempfile
import time
from pathlib import Path

from loadgen.base.errors import DriverError, MissingExtra
from loadgen.local_brokers.launch import LocalBroker, free_port, port_open, stop_process

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
        raise DriverError("spark", "no Java: install a JRE 17+ (java on PATH or JAVA_HOME)")
    return script


def _environment(folder: Path) -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_WORK_DIR": str(folder / "work"),
        "SPARK_LOG_DIR": str(folder / "logs"),
        "SPARK_LOCAL_DIRS": str(folder / "local"),
    }


def _launch(args: list[str], log_path: Path, env: dict[str, str]) -> int:
    """One JVM in its own session (its executors join its group)."""
    with open(log_path, "ab") as log_file:
        process = subprocess.Popen(
            [str(spark_class()), *args],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    return process.pid


def _wait_for_port(port: int, pid: int, log_path: Path, what: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not port_open(port):
        if not _alive(pid) or time.monotonic() > deadline:
            tail = log_path.read_text(errors="replace")[-2000:]
            raise DriverError("spark", f"the {what} did not start on 127.0.0.1:{port}:\n{tail}")
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        done = 0
    if done == pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def start_spark_cluster(
    port: int | None = None, log_dir: Path | None = None, *, detach: bool = False, workers: int = 1
) -> LocalBroker:
    """A master on 127.0.0.1:``port`` (a free one by default) and ``workers`` one-core workers,
    each registered before this returns. ``detach`` is accepted for ``brokers up``: every JVM
    runs in its own session anyway, so it outlives the caller."""
    del detach
    chosen = port or free_port()
    if port_open(chosen):
        raise DriverError("spark", f"port 127.0.0.1:{chosen} is already in use")
    temporary = None if log_dir else tempfile.mkdtemp(prefix="loadgen-spark-")
    folder = Path(log_dir or temporary)
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
    cluster = LocalBroker("spark", url, master, str(master_log), {}, temporary, helpers)
    try:
        _wait_for_port(chosen, master, master_log, "Spark master")
        logs = [folder / "logs" / f"worker-{chosen}-{n}.log" for n in range(workers)]
        helpers += [_launch(_worker_args(url), log, env) for log in logs]
        for log, pid in zip(logs, helpers, strict=True):
            _wait_for_registration(log, pid)
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


def _wait_for_registration(log_path: Path, pid: int) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while REGISTERED not in log_path.read_text(errors="replace"):
        if not _alive(pid) or time.monotonic() > deadline:
            tail = log_path.read_text(errors="replace")[-2000:]
            raise DriverError("spark", f"a Spark worker did not register:\n{tail}")
        time.sleep(0.1)


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
