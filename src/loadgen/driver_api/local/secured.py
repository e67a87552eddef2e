"""What the local secured endpoints share: a TLS front process of their own in front of a
local broker, certificates in the endpoint's folder, and files only their owner can read.

Each front (:mod:`loadgen_drivers.kafka.local.front`, :mod:`loadgen_drivers.pulsar.local.front`)
runs as a
process, so ``loadgen brokers up KIND --secure`` can leave it running and ``down`` stop it by
pid, like the brokers themselves.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from loadgen.driver_api.local.certs import CertSet, Pair, make_certs, serves_until
from loadgen.driver_api.local.process import LocalBroker, spawn_logged, wait_until

CA_NAME = "loadgen-test-ca"
ENDPOINT_DAYS = 365
"""How long an endpoint's certificates last: `loadgen brokers up KIND --secure` may stay up for
weeks, where a test session's certificates last two days."""
RENEW_DAYS = 30
"""Certificates that expire within this many days (or fail today's checks) are made anew when
an endpoint starts, so an endpoint never comes up with certificates about to expire."""
READY_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 5.0


def folder_certs(folder: Path, server: Pair | None = None) -> tuple[Path, Pair]:
    """The CA file and the server pair to serve: those :func:`make_certs` left in ``folder``,
    made now if missing, or if they would not verify :data:`RENEW_DAYS` from now; ``server``
    replaces the pair (an expired one, signed by the folder's CA, which is then kept as is)."""
    ca = folder / f"{CA_NAME}.pem"
    made = Pair(folder / "server.pem", folder / "server.key")
    present = all(path.exists() for path in (ca, ca.with_suffix(".key"), made.cert, made.key))
    renew_at = time.time() + RENEW_DAYS * 86400
    if not present or (server is None and not serves_until(ca, made.cert, renew_at)):
        certs: CertSet = make_certs(folder, CA_NAME, days=ENDPOINT_DAYS)
        ca, made = certs.ca, certs.server
    return ca, server or made


@contextmanager
def stopped_on_failure(temporary: str | None) -> Iterator[ExitStack]:
    """A stack for what a starting endpoint starts (``callback`` each process's stop): if the
    start fails, everything on it is stopped, last first, and ``temporary`` (the folder
    :func:`claim` made, holding the endpoint's secrets) removed; once it succeeds, nothing is."""
    with ExitStack() as undo:
        if temporary:
            undo.callback(shutil.rmtree, temporary, ignore_errors=True)
        yield undo
        undo.pop_all()


def start_front(
    module: str, arguments: list[str], log_path: Path, *, detach: bool
) -> subprocess.Popen[bytes]:
    """``python -m module arguments``, its output in ``log_path``; in a session of its own when
    ``detach`` (it outlives the command that started it)."""
    return spawn_logged([sys.executable, "-m", module, *arguments], log_path, detach=detach)


def await_front(front: subprocess.Popen[bytes], broker: LocalBroker) -> None:
    """Return once a TLS handshake with the front at ``broker.address`` completes (nothing
    verified: an expired certificate must come up too); raise LocalBrokerError with the log's
    tail if the front exits or :data:`READY_TIMEOUT_S` pass."""
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

    wait_until(
        broker.kind,
        handshakes,
        alive=lambda: front.poll() is None,
        timeout_s=READY_TIMEOUT_S,
        failure=f"the TLS front did not start on {broker.address}",
        log_path=broker.log_path,
    )
