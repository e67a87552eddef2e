"""What the local secured endpoints share: a TLS front process of their own in front of a
local broker, certificates in the endpoint's folder, and files only their owner can read.

Each front (:mod:`loadgen_drivers.kafka.local.front`, :mod:`loadgen_drivers.pulsar.local.front`)
runs as a
process, so ``loadgen brokers up KIND --secure`` can leave it running and ``down`` stop it by
pid, like the brokers themselves.
"""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
from pathlib import Path

from loadgen.base.errors import LocalBrokerError
from loadgen.driver_api.local.certs import CertSet, Pair, make_certs
from loadgen.driver_api.local.process import LocalBroker, spawn_logged, wait_until

CA_NAME = "loadgen-test-ca"
ENDPOINT_DAYS = 365
"""How long an endpoint's certificates last: `loadgen brokers up KIND --secure` may stay up for
weeks, where a test session's certificates last two days."""
READY_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 5.0


def folder_certs(folder: Path, server: Pair | None = None) -> tuple[Path, Pair]:
    """The CA file and the server pair to serve: those :func:`make_certs` left in ``folder``
    (made now if missing); ``server`` replaces the pair (an expired one, signed by that CA)."""
    ca = folder / f"{CA_NAME}.pem"
    made = Pair(folder / "server.pem", folder / "server.key")
    if not all(path.exists() for path in (ca, ca.with_suffix(".key"), made.cert, made.key)):
        certs: CertSet = make_certs(folder, CA_NAME, days=ENDPOINT_DAYS)
        ca, made = certs.ca, certs.server
    return ca, server or made


def write_private(path: Path, data: str | bytes) -> Path:
    """``data`` in a file only its owner can read, from the start: it holds a secret."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as out:
        out.write(data.encode() if isinstance(data, str) else data)
    return path


def start_front(
    module: str, arguments: list[str], log_path: Path, *, detach: bool
) -> subprocess.Popen[bytes]:
    """``python -m module arguments``, its output in ``log_path``; in a session of its own when
    ``detach`` (it outlives the command that started it)."""
    return spawn_logged([sys.executable, "-m", module, *arguments], log_path, detach=detach)


def await_front(front: subprocess.Popen[bytes], broker: LocalBroker) -> None:
    """Return once a TLS handshake with the front at ``broker.address`` completes (nothing
    verified: an expired certificate must come up too); if the front exits or
    :data:`READY_TIMEOUT_S` pass, stop ``broker`` and raise LocalBrokerError with the log's
    tail."""
    host, _, port = broker.address.rpartition(":")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE

    def handshakes() -> bool:
        try:
            with (
                socket.create_connection((host, int(port)), timeout=1) as raw,
                context.wrap_socket(raw),
            ):
                return True
        except OSError:
            return False

    try:
        wait_until(
            broker.kind,
            handshakes,
            alive=lambda: front.poll() is None,
            timeout_s=READY_TIMEOUT_S,
            failure=f"the TLS front did not start on {broker.address}",
            log_path=broker.log_path,
        )
    except LocalBrokerError:
        broker.stop(STOP_TIMEOUT_S)
        raise
