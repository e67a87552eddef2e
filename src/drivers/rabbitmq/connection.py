"""AMQP connections that several producers or consumers share, one channel each.

``producersPerConnection`` / ``consumersPerConnection`` say how many channels a connection
carries before the driver opens the next one (1, the default, gives every client its own
connection; OMB shares one connection per URI among all clients). A :class:`SharedConnection`
lives on one event loop: the producers' stepped :class:`~drivers.rabbitmq.pump.Pump`, or a
:class:`LoopThread` that its consumers share. Everything in it runs on that loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import pika
from pika.adapters.asyncio_connection import AsyncioConnection

from loadgen.errors import DriverError

OnLost = Callable[[DriverError], None]


class SharedConnection:
    """One connection; channel users hear of its loss once, and the last release closes it."""

    def __init__(
        self,
        parameters: pika.URLParameters,
        address: str,
        loop: asyncio.AbstractEventLoop,
        on_change: Callable[[], None],
        capacity: int,
    ) -> None:
        """``on_change`` runs after it opened, failed or closed (to end a wait on its loop)."""
        self.address = address
        self.capacity = capacity
        self.users = 0
        self.failure: DriverError | None = None
        self._on_change = on_change
        self._listeners: list[OnLost] = []
        self._closing = False
        self._connection = AsyncioConnection(
            parameters,
            on_open_callback=lambda _: on_change(),
            on_open_error_callback=self._on_open_error,
            on_close_callback=self._on_closed,
            custom_ioloop=loop,
        )

    @property
    def is_open(self) -> bool:
        return self._connection.is_open

    @property
    def is_closed(self) -> bool:
        return self._connection.is_closed

    @property
    def has_room(self) -> bool:
        return self.failure is None and self.users < self.capacity

    def open_channel(self, on_open: Callable[[object], None], on_lost: OnLost) -> None:
        """Open a channel for a new user; ``on_lost`` hears if the connection goes away."""
        self.users += 1
        if self.failure is not None:
            on_lost(self.failure)
            return
        self._listeners.append(on_lost)
        self._connection.channel(on_open_callback=on_open)

    def release(self, on_lost: OnLost) -> None:
        """A user is done with its channel; the last one closes the connection."""
        if on_lost in self._listeners:
            self._listeners.remove(on_lost)
        self.users -= 1
        if self.users <= 0:
            self.close()

    def close(self) -> None:
        self._closing = True
        if not (self._connection.is_closing or self._connection.is_closed):
            self._connection.close()
        else:
            self._on_change()

    def _on_open_error(self, _connection: object, error: BaseException) -> None:
        self.failure = DriverError("rabbitmq", f"cannot connect to {self.address}: {error!r}")
        self._on_change()

    def _on_closed(self, _connection: object, reason: BaseException) -> None:
        if not self._closing and self.failure is None:
            self.failure = DriverError(
                "rabbitmq", f"connection to {self.address} closed: {reason!r}"
            )
            listeners, self._listeners = self._listeners, []
            for on_lost in listeners:
                on_lost(self.failure)
        self._on_change()


class LoopThread:
    """An event loop on a thread of its own, for consumers that share connections."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            self.loop.close()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def call(self, function: Callable[..., object], *args: object) -> bool:
        """Run ``function(*args)`` on the loop soon; False when the loop has ended."""
        try:
            self.loop.call_soon_threadsafe(function, *args)
        except RuntimeError:  # closed
            return False
        return True

    def call_and_wait(self, function: Callable[..., object], timeout_s: float) -> bool:
        """Run ``function(done)`` on the loop; wait until it calls ``done`` (or ``timeout_s``)."""
        finished = threading.Event()
        return self.call(function, finished.set) and finished.wait(timeout_s)

    def join(self, timeout_s: float) -> None:
        self._thread.join(timeout_s)
