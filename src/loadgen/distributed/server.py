"""``loadgen worker``: the worker API over HTTP (aiohttp on uvloop).

Every request carries ``Authorization: Bearer <token>`` when the worker has a token, and a
worker bound to anything but loopback must have one. Bodies are size-limited and validated
(:mod:`.wire`); errors come back as JSON ``{"error", "message", "exitCode"}`` so the coordinator
can report them as the worker's own, with the exit code they deserve.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psutil
import uvloop
from aiohttp import web
from pydantic import BaseModel, ValidationError

import loadgen.base.version
from loadgen.base.cpus import available_cpus
from loadgen.base.errors import ConfigError, LoadgenError
from loadgen.base.exposure import check_exposure
from loadgen.distributed.service import WorkerService
from loadgen.engine import recorder
from loadgen.formats import worker_protocol as wire
from loadgen.metrics.board import MetricsBoard
from loadgen.metrics.endpoint import serving

log = logging.getLogger("loadgen.distributed.worker")

DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024
"""Payload pools travel in the start-load request; 64 MiB fits OMB's largest (1000 × 10 KiB)."""

IN_FLIGHT_GRACE_S = 1.0
"""How long a stopping worker lets a request in progress finish before it exits anyway."""
Handler = Callable[[web.Request], Awaitable[web.Response]]


def parse_bind(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` for IPv6); port 0 picks a free one."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ConfigError(
            "expected HOST:PORT", path="--bind", value=text, allowed="e.g. 127.0.0.1:8080"
        )
    return host, int(port)


def _error(status: int, kind: str, message: str, exit_code: int) -> web.Response:
    body = {"error": kind, "message": message, "exitCode": exit_code}
    return web.json_response(body, status=status)


def _refused(error: LoadgenError) -> web.Response:
    """A loadgen error the worker hit doing what was asked, with the exit code it deserves."""
    return _error(422, type(error).__name__, str(error), error.exit_code)


def _authenticate(token: str | None) -> Callable:
    expected = f"Bearer {token}".encode() if token else None

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if expected is not None:
            given = request.headers.get("Authorization", "").encode()
            if not hmac.compare_digest(given, expected):
                return _error(401, "Unauthorized", "missing or wrong token", 2)
        return await handler(request)

    return middleware


class _Routes:
    """Turns each :class:`WorkerService` method into a handler: parse, run, answer."""

    def __init__(self, service: WorkerService, executor: ThreadPoolExecutor) -> None:
        self.service = service
        self.executor = executor
        self.in_flight = 0
        """Requests waiting for or running on the executor."""

    def blocking(self, method: Callable[..., Any], body: type[BaseModel] | None = None) -> Handler:
        async def handle(request: web.Request) -> web.Response:
            try:
                args = [body.model_validate(json.loads(await request.read()))] if body else []
            except (ValueError, ValidationError) as error:
                return _error(400, "BadRequest", str(error), 2)
            except RecursionError:  # json.loads on "[[[[…": nesting no wire body has
                return _error(400, "BadRequest", "JSON nested too deeply", 2)
            loop = asyncio.get_running_loop()
            self.in_flight += 1
            try:
                answer = await loop.run_in_executor(self.executor, method, *args)
            except LoadgenError as error:
                return _refused(error)
            except Exception as error:
                log.exception("request %s failed", request.path)
                return _error(500, type(error).__name__, str(error) or repr(error), 1)
            finally:
                self.in_flight -= 1
            return web.json_response(answer or {})

        return handle

    async def counters(self, request: web.Request) -> web.Response:
        try:
            return web.json_response(self.service.counters())
        except LoadgenError as error:
            return _refused(error)

    async def clock(self, request: web.Request) -> web.Response:
        received = time.time_ns()
        return web.json_response({"receivedNs": received, "repliedNs": time.time_ns()})

    async def health(self, request: web.Request) -> web.Response:
        cpus = available_cpus()
        return web.json_response(
            {
                "loadgen": loadgen.base.version.__version__,
                "protocol": wire.PROTOCOL,
                "busy": self.service.busy,
                "cpuAffinity": None if cpus is None else sorted(cpus),
                "recorderEngine": recorder.ENGINE,
            }
        )


def make_app(routes: _Routes, token: str | None, max_body_bytes: int) -> web.Application:
    app = web.Application(middlewares=[_authenticate(token)], client_max_size=max_body_bytes)
    s = routes.service
    app.add_routes(
        [
            web.get("/health", routes.health),
            web.get("/clock", routes.clock),
            web.get("/counters", routes.counters),
            web.post("/driver", routes.blocking(s.open, wire.DriverBody)),
            web.post("/topics", routes.blocking(s.create_topics, wire.TopicsBody)),
            web.post("/topics/adopt", routes.blocking(s.adopt_topics, wire.AdoptBody)),
            web.post("/consumers", routes.blocking(s.create_consumers, wire.ConsumersBody)),
            web.post("/consumers/catch-up", routes.blocking(s.pause_catch_up, wire.PauseBody)),
            web.post("/producers", routes.blocking(s.create_producers, wire.ProducersBody)),
            web.post("/clock/correction", routes.blocking(s.correct_clocks, wire.ClockBody)),
            web.post("/probe/send", routes.blocking(s.send_probes, wire.TimeoutBody)),
            web.post("/probe/end", routes.blocking(s.end_probe)),
            web.post("/load/start", routes.blocking(s.start_load, wire.LoadBody)),
            web.post("/load/rate", routes.blocking(s.adjust_rate, wire.RateBody)),
            web.post("/load/stop", routes.blocking(s.stop_load, wire.TimeoutBody)),
            web.post("/snapshot", routes.blocking(s.snapshot, wire.SnapshotBody)),
            web.post("/accounting", routes.blocking(s.accounting, wire.AccountingBody)),
            web.post("/close", routes.blocking(s.close, wire.CloseBody)),
        ]
    )
    return app


async def _until_stopped(exit_with_stdin: bool) -> None:
    """Until SIGTERM/SIGINT, or (for a worker this host's coordinator started) stdin's EOF:
    the parent's end, however it ended."""
    loop = asyncio.get_running_loop()
    stopped = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopped.set)
    if exit_with_stdin:
        fd = sys.stdin.fileno()

        def readable() -> None:
            if not os.read(fd, 4096):
                loop.remove_reader(fd)
                stopped.set()

        loop.add_reader(fd, readable)
    await stopped.wait()


async def _serve(
    sock: socket.socket,
    token: str | None,
    max_body_bytes: int,
    announce: Callable[[str], None],
    exit_with_stdin: bool,
    board: MetricsBoard | None,
) -> None:
    service = WorkerService(board)
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="loadgen-worker")
    routes = _Routes(service, executor)
    runner = web.AppRunner(make_app(routes, token, max_body_bytes), access_log=None)
    await runner.setup()
    try:
        await web.SockSite(runner, sock).start()
        announce(_url(sock))
        await _until_stopped(exit_with_stdin)
    finally:
        deadline = time.monotonic() + IN_FLIGHT_GRACE_S
        while routes.in_flight and time.monotonic() < deadline:
            await asyncio.sleep(0.05)  # a snapshot or a counter read ends in milliseconds
        if routes.in_flight:
            _exit_now()
        await runner.cleanup()
        await asyncio.get_running_loop().run_in_executor(
            executor, service.close, wire.CloseBody(delete_topics=False)
        )
        executor.shutdown()


def _exit_now() -> None:
    """Stop while a driver call (a silent controller, a hung broker) holds the executor thread.

    Python cannot stop a thread blocked in C, and stopping was asked for: end the processes
    the driver started (the Pravega driver's control child) and exit without waiting."""
    log.error("stopping while a request is still running in the driver; exiting now")
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            child.kill()
    os._exit(1)


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{host if ':' not in host else f'[{host}]'}:{port}"


def serve(
    bind: str,
    token: str | None,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    announce: Callable[[str], None] = print,
    exit_with_stdin: bool = False,
    metrics: tuple[str, int] | None = None,
    announce_metrics: Callable[[str], None] = print,
) -> None:
    """Serve the worker API on ``bind`` until stopped; ``announce`` gets the URL once listening.

    ``metrics`` (host, port) also serves this worker's figures in Prometheus' format there, under
    the same token rule (:mod:`loadgen.metrics.endpoint`); ``announce_metrics`` gets its URL.
    """
    host, port = parse_bind(bind)
    check_exposure(host, token)
    try:
        sock = socket.create_server((host, port), family=_family(host))
    except OSError as error:
        raise ConfigError(
            f"cannot listen there: {error.strerror or error}",
            path="--bind",
            value=bind,
            allowed="a local address and a free port",
        ) from None
    with sock, contextlib.ExitStack() as stack:
        board = None
        if metrics is not None:
            board = MetricsBoard(role="worker", worker=_url(sock))
            announce_metrics(stack.enter_context(serving(board, *metrics, token)))
        uvloop.run(_serve(sock, token, max_body_bytes, announce, exit_with_stdin, board))


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET
