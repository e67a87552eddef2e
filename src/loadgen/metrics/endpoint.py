"""The HTTP endpoint that serves a :class:`~.board.MetricsBoard` in Prometheus' text format.

It follows the worker API's exposure rule (:mod:`loadgen.base.exposure`): a host other
than loopback needs a token, and with a token every scrape must send
``Authorization: Bearer <token>`` (what Prometheus' ``authorization`` scrape setting sends).
The server runs on a thread owned by :func:`serving`, which stops it and closes the port when
its block ends.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import make_wsgi_app
from prometheus_client.registry import CollectorRegistry

from loadgen.base.errors import ConfigError
from loadgen.base.exposure import check_exposure
from loadgen.metrics.board import MetricsBoard

log = logging.getLogger("loadgen.metrics")

DEFAULT_HOST = "127.0.0.1"
PATH = "/metrics"
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes every few seconds would flood the run's output."""


def _guarded(app: WsgiApp, token: str | None) -> WsgiApp:
    """``app`` behind the bearer token, when there is one."""
    if not token:
        return app
    expected = f"Bearer {token}".encode()

    def guard(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        given = environ.get("HTTP_AUTHORIZATION", "").encode()
        if hmac.compare_digest(given, expected):
            return app(environ, start_response)
        start_response("401 Unauthorized", [("Content-Type", "text/plain")])
        return [b"missing or wrong token\n"]

    return guard


def _url(host: str, port: int) -> str:
    return f"http://{f'[{host}]' if ':' in host else host}:{port}{PATH}"


@contextlib.contextmanager
def serving(board: MetricsBoard, host: str, port: int, token: str | None = None) -> Iterator[str]:
    """Serve ``board`` on ``host:port`` (0: any free port) until the block ends; yields the
    scrape URL. A port that cannot be bound is a :class:`ConfigError` naming ``host:port``."""
    check_exposure(host, token, "serving metrics on", "--metrics-host")
    registry = CollectorRegistry(auto_describe=False)
    registry.register(board)
    server_class = _Server6 if ":" in host else _Server
    try:
        server = make_server(
            host, port, _guarded(make_wsgi_app(registry), token), server_class, _Quiet
        )
    except OSError as error:
        raise ConfigError(
            f"cannot serve metrics on {host}:{port}: {error.strerror or error}",
            path="--metrics-port",
            value=port,
            allowed="a free port on a local address, or 0 for any free port",
        ) from None
    url = _url(host, server.server_port)
    thread = threading.Thread(
        target=server.serve_forever, args=(0.1,), name="loadgen-metrics", daemon=True
    )
    thread.start()
    log.info("metrics on %s", url)
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
