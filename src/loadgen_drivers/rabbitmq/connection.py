"""AMQP connections that several producers or consumers share, one channel each.

``producersPerConnection`` / ``consumersPerConnection`` say how many channels a connection
carries before the driver opens the next one (1, the default, gives every client its own
connection; OMB shares one connection per URI among all clients). A :class:`SharedConnection`
lives on one event loop: the producers' stepped :class:`~loadgen_drivers.rabbitmq.pump.Pump`, or a
:class:`LoopThread` that its consumers share. Everything in it runs on that loop.

A connection that the broker drops (a restart, a network failure) is reopened every
``recoveryIntervalMs`` until it is back, as the RabbitMQ Java client's automatic recovery does:
users hear of the loss (their messages awaiting a confirm fail) and get a new channel on the new
connection through the same ``on_open`` they gave first. With recovery off (interval 0) a lost
connection stays lost and every user fails for good.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from time import monotonic

import pika
from pika.adapters.asyncio_connection import AsyncioConnection

from loadgen.base.errors import DriverError

log = logging.getLogger("loadgen.rabbitmq")

OnLost = Callable[[DriverError], None]
OnOpen = Callable[[object], None]


class SharedConnection:
    """One connection; channel users hear of each loss, and the last release closes it."""

    def __init__(
        self,
        parameters: pika.URLParameters,
        address: str,
        loop: asyncio.AbstractEventLoop,
        on_change: Callable[[], None],
        capacity: int,
        recovery_interval_s: float = 0.0,
    ) -> None:
        """``on_change`` runs after it opened, failed or closed (to end a wait on its loop)."""
        self.address = address
        self.capacity = capacity
        self.users = 0
        self.failure: DriverError | None = None
        """Set when the connection is lost for good (never opened, or lost with recovery off)."""
        self.down: DriverError | None = None
        """Set while a dropped connection is being reopened."""
        self._parameters = parameters
        self._loop = loop
        self._recovery_interval_s = recovery_interval_s
        self._on_change = on_change
        self._users: dict[OnLost, OnOpen] = {}
        self._closing = False
        self._was_open = False
        self._down_at = 0.0
        self._connection = self._connect()

    def _connect(self) -> AsyncioConnection:
        return AsyncioConnection(
            self._parameters,
            on_open_callback=self._on_open,
            on_open_error_callback=self._on_open_error,
            on_close_callback=self._on_closed,
            custom_ioloop=self._loop,
        )

    @property
    def is_open(self) -> bool:
        return self._connection.is_open

    @property
    def is_closed(self) -> bool:
        """Closed for good: not while it is being reopened."""
        return self._connection.is_closed and self.down is None

    @property
    def has_room(self) -> bool:
        return self.failure is None and self.users < self.capacity

    def open_channel(self, on_open: OnOpen, on_lost: OnLost) -> None:
        """Open a channel for a new user; ``on_lost`` hears if the connection goes away, and
        ``on_open`` gets the new channel each time a dropped connection is back."""
        self.users += 1
        if self.failure is not None:
            on_lost(self.failure)
            return
        self._users[on_lost] = on_open
        if self.down is None:
            self._connection.channel(on_open_callback=on_open)

    def release(self, on_lost: OnLost) -> None:
        """A user is done with its channel; the last one closes the connection."""
        self._users.pop(on_lost, None)
        self.users -= 1
        if self.users <= 0:
            self.close()

    def close(self) -> None:
        self._closing = True
        self.down = None  # stop reopening: a retry still pending finds the connection closing
        if not (self._connection.is_closing or self._connection.is_closed):
            self._connection.close()
        else:
            self._on_change()

    def _on_open(self, _connection: object) -> None:
        if self._closing:  # released while it was being reopened
            self._connection.close()
            return
        if self.down is not None:
            log.warning(
                "connection to %s is back after %.1f s", self.address, monotonic() - self._down_at
            )
            self.down = None
            for on_open in list(self._users.values()):
                self._connection.channel(on_open_callback=on_open)
        self._was_open = True
        self._on_change()

    def _on_open_error(self, _connection: object, error: BaseException) -> None:
        if self.down is not None:  # still down: try again
            self._retry_later()
            return
        self.failure = DriverError("rabbitmq", f"cannot connect to {self.address}: {error!r}")
        self._on_change()

    def _on_closed(self, _connection: object, reason: BaseException) -> None:
        if self._closing or self.failure is not None:
            self._on_change()
            return
        lost = DriverError("rabbitmq", f"connection to {self.address} closed: {reason!r}")
        if self._was_open and self._recovery_interval_s > 0:
            self.down = lost
            self._down_at = monotonic()
            log.warning("%s; reopening it every %.1f s", lost, self._recovery_interval_s)
            self._retry_later()
        else:
            self.failure = lost
        for on_lost in list(self._users):
            on_lost(lost)
        self._on_change()

    def _retry_later(self) -> None:
        self._loop.call_later(self._recovery_interval_s, self._reconnect)

    def _reconnect(self) -> None:
        if self.down is not None and not self._closing:
            self._connection = self._connect()


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
