"""The coordinator's HTTP side: one uvloop event loop on its own thread, one client per worker.

The scenario is plain synchronous code; it hands coroutines to :class:`ControlPlane`, which runs
them on its loop, all workers at once, and waits for them. Every request has a deadline, so a
worker that stops answering is reported (:class:`~loadgen.base.errors.WorkerLost`), never waited on.
"""

from __future__ import annotations

import asyncio
import errno
import json
import math
import threading
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

import aiohttp
import uvloop

from loadgen.base.errors import WorkerError, WorkerLost, WorkerRefused, WorkerUnreachable
from loadgen.distributed.clock import ClockOffset, Sample, best_offset

T = TypeVar("T")

CONNECT_TIMEOUT_S = 10.0
"""How long the first answer of a worker may take before it is reported unreachable (unless
``--workers-wait`` says otherwise), and how long any later connection attempt may take."""
LATE_WORKER_HINT = "a worker still starting needs --workers-wait"
CLOCK_SAMPLES = 8
RETRY_PAUSE_S = 0.25


class ControlPlane:
    """A uvloop loop on a daemon thread with one aiohttp session for every worker."""

    def __init__(self, token: str | None) -> None:
        self._loop = uvloop.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="loadgen-control", daemon=True
        )
        self._thread.start()
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.session: aiohttp.ClientSession = self.run(self._open(headers))

    @staticmethod
    async def _open(headers: dict[str, str]) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(headers=headers)

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the control loop and wait for it (the coroutine has its own
        deadlines); a Ctrl-C while waiting cancels it."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result()
        except KeyboardInterrupt:
            future.cancel()
            raise

    def close(self) -> None:
        self.run(self.session.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()


class WorkerClient:
    """Requests to one worker; errors become :class:`~loadgen.base.errors.WorkerError`\\ s naming
    it.

    Before the worker first answered, silence means unreachable (exit 3); after, it means lost.
    """

    def __init__(self, url: str, session: aiohttp.ClientSession) -> None:
        self.url = url.rstrip("/")
        self._session = session
        self.answered = False
        self.deadline_cap_s: float | None = None
        """When set, no request waits longer than this (after a Ctrl-C)."""

    async def request(
        self, method: str, path: str, body: Any = None, *, timeout_s: float = 30.0
    ) -> dict[str, Any]:
        if self.deadline_cap_s is not None:
            timeout_s = min(timeout_s, self.deadline_cap_s)
        # ceil_threshold: aiohttp rounds deadlines of over 5 s up to a whole second of the
        # loop's clock (a 10-s deadline could fire at 11 s); a deadline here is the one the
        # docs promise
        timeout = aiohttp.ClientTimeout(
            total=timeout_s, sock_connect=CONNECT_TIMEOUT_S, ceil_threshold=math.inf
        )
        try:
            async with self._session.request(
                method, self.url + path, json=body, timeout=timeout
            ) as response:
                status = response.status
                text = await response.text()
        except (TimeoutError, aiohttp.ClientError) as error:
            detail = f"{method} {path}: {_describe(error, timeout_s)}"
            if self.answered:
                raise WorkerLost(self.url, detail) from None
            raise WorkerUnreachable(self.url, detail, refused=_refused(error)) from None
        self.answered = True
        if status == 401:
            raise WorkerRefused(self.url)
        answer = _json_object(text)
        if status != 200:
            message = answer.get("message") or f"HTTP {status}: {text.strip()[:200]}"
            raise WorkerError(self.url, f"{path}: {message}", int(answer.get("exitCode", 1)))
        return answer

    async def first_contact(
        self, wait_s: float = CONNECT_TIMEOUT_S, *, retry_refused: bool = False
    ) -> dict[str, Any]:
        """``GET /health``, answered within ``wait_s``. A refused connection (nothing listens
        yet) fails at once, unless ``retry_refused``: then it is retried for up to ``wait_s``
        (workers started together with the coordinator, as in a compose file)."""
        deadline = time.monotonic() + wait_s
        while True:
            remaining = deadline - time.monotonic()
            try:
                return await self.request("GET", "/health", timeout_s=max(remaining, 0.1))
            except WorkerUnreachable as error:
                if error.refused and not retry_refused:
                    raise WorkerUnreachable(
                        self.url, f"GET /health: connection refused ({LATE_WORKER_HINT})"
                    ) from None
                # what is left now: a silent worker took all of it
                if deadline - time.monotonic() < RETRY_PAUSE_S * 2:
                    raise
                await asyncio.sleep(RETRY_PAUSE_S)

    async def clock_offset(self, samples: int = CLOCK_SAMPLES) -> ClockOffset:
        """The best of ``samples`` four-timestamp exchanges (:mod:`.clock`)."""
        taken: list[Sample] = []
        for _ in range(samples):
            sent = time.time_ns()
            answer = await self.request("GET", "/clock", timeout_s=CONNECT_TIMEOUT_S)
            taken.append((sent, answer["receivedNs"], answer["repliedNs"], time.time_ns()))
        return best_offset(taken)


def _json_object(text: str) -> dict[str, Any]:
    """The answer's JSON object; empty for anything else (a proxy's HTML error page...)."""
    try:
        answer = json.loads(text)
    except ValueError:
        return {}
    return answer if isinstance(answer, dict) else {}


def _refused(error: BaseException) -> bool:
    """The worker's host refused the connection: nothing listens on that port."""
    cause = getattr(error, "os_error", None)  # aiohttp.ClientConnectorError's
    return isinstance(cause, OSError) and cause.errno == errno.ECONNREFUSED


def _describe(error: BaseException, timeout_s: float) -> str:
    if isinstance(error, TimeoutError):
        return f"no answer within {timeout_s:.0f} s"
    if _refused(error):
        return "connection refused"
    return str(error) or type(error).__name__
