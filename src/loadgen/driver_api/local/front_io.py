"""What the local secured fronts (:mod:`loadgen_drivers.kafka.local.front`,
:mod:`loadgen_drivers.pulsar.local.front`) do alike as processes: read ``HOST:PORT`` arguments,
serve TLS with a given certificate, stop on SIGTERM or SIGINT, and move a relayed
connection's bytes until either side closes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import ssl
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

CHUNK = 65536
SHOWN_NAME_CHARS = 64


def host_port(text: str) -> tuple[str, int]:
    """A ``HOST:PORT`` command-line value."""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    return host, int(port)


def shown(name: str | None) -> str:
    """A name a client sent before it was authenticated (a user, a token's subject, a
    mechanism), for a log line or an error message: cut short, so a client cannot flood the log."""
    if name is None:
        return "unknown"
    return repr(name[:SHOWN_NAME_CHARS])


def server_tls(cert: Path, key: Path) -> ssl.SSLContext:
    """A server's TLS context with Python's secure defaults and this certificate."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(cert), str(key))
    return context


def stop_on_signals() -> asyncio.Event:
    """An event set by SIGTERM or SIGINT (call inside the running loop)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for each in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(each, stop.set)
    return stop


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Bytes from ``reader`` to ``writer`` as they come; ``drain`` bounds what is buffered. A
    reset connection is an end like any other."""
    with contextlib.suppress(OSError):
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()


async def until_first_ends(*directions: Coroutine[Any, Any, None]) -> None:
    """Run the relay's directions until one ends (a side closed), then stop the others."""
    tasks = [asyncio.create_task(direction) for direction in directions]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
