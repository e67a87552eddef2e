"""A TLS server on 127.0.0.1 that only completes handshakes and records them.

For clients whose broker cannot serve TLS in tests (tansu, pulsar-lite): a completed
handshake shows that the client loaded the CA (and, when asked for, its own certificate) from
the settings loadgen gave it.
"""

from __future__ import annotations

import socket
import ssl
import threading

from loadgen.driver_api.local.certs import CertSet

NO_CLIENT_CERT = ""


class TlsServer:
    """Context manager; ``handshakes`` holds each client's certificate CN (or
    :data:`NO_CLIENT_CERT`), ``failures`` each refused handshake's reason."""

    def __init__(self, certs: CertSet, require_client_cert: bool = True) -> None:
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(certs.ca))
        self.context.load_cert_chain(str(certs.server.cert), str(certs.server.key))
        self.context.verify_mode = ssl.CERT_REQUIRED if require_client_cert else ssl.CERT_NONE
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port: int = self.listener.getsockname()[1]
        self.handshakes: list[str] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="tls-server", daemon=True)

    def __enter__(self) -> TlsServer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.listener.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self.listener.accept()
            except TimeoutError:
                continue
            connection.settimeout(2)
            try:
                with self.context.wrap_socket(connection, server_side=True) as tls:
                    self.handshakes.append(_common_name(tls.getpeercert()))
            except (ssl.SSLError, OSError) as error:
                self.failures.append(str(error))
                connection.close()


def _common_name(certificate: dict | None) -> str:
    if not certificate:
        return NO_CLIENT_CERT
    return dict(pair[0] for pair in certificate["subject"]).get("commonName", NO_CLIENT_CERT)
