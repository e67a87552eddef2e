"""A third-party driver: loadgen's memory driver under another name.

It declares everything the engine asks of a driver class (a URL scheme, an OMB driverClass,
its client distribution: this package itself, a local broker) and inherits the rest.
"""

import sys
from pathlib import Path

from loadgen.driver_api import LocalStarter
from loadgen.driver_api.local.process import LocalBroker, await_listening, claim, spawn_logged
from loadgen_drivers.memory import Driver as MemoryDriver


def start_echo_broker(
    port: int | None, folder: Path | None, *, detach: bool = False
) -> LocalBroker:
    """The echo "broker": a process that listens on ``port``, started with loadgen's launcher."""
    chosen, place, temporary = claim("echo", port, folder)
    log_path = place / f"echo-{chosen}.log"
    command = [sys.executable, "-m", "http.server", str(chosen), "--bind", "127.0.0.1"]
    process = spawn_logged(command, log_path, detach=detach)
    address = f"127.0.0.1:{chosen}"
    broker = LocalBroker("echo", address, process.pid, str(log_path), {}, temporary)
    await_listening("the echo broker", broker, process, [chosen], timeout_s=10.0)
    return broker


class Driver(MemoryDriver):
    display_name = "Echo"
    url_schemes = ("echo",)
    omb_driver_classes = ("org.example.echo.EchoBenchmarkDriver",)
    client_distributions = ("loadgen-echo",)
    local_broker = LocalStarter("loadgen_echo:start_echo_broker", 17777)
