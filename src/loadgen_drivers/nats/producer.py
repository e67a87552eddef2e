"""A NATS JetStream producer: async publishes with a window, handed to the loop in batches.

On the producer loop's thread a message is only stamped (by ``send``, or by the loop itself
through :meth:`NatsProducer.prefixed_send`) and appended to a list. ``poll`` (between bursts) or
a full list hands the list to the driver's event loop in one call, where one task publishes each
message with a reply subject of the producer's own (``<inbox>.<sequence>``): the stream's PubAck
comes back there and settles that message's ``on_done`` on the loop's thread (no future per
message, unlike nats-py's ``publish_async``). At most ``maxPending`` messages are
unacknowledged; a send beyond that waits for acks.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from time import time_ns
from zlib import crc32

from nats.aio.client import Client
from nats.aio.msg import Msg

from loadgen.base.errors import DriverError
from loadgen.driver_api import ACK, KEY, VALUE, CallbackAcks, OnDone, PrefixedSend
from loadgen.driver_api.loop_thread import LoopThread
from loadgen.driver_api.stamp import PREFIX_BYTES, Prefixer
from loadgen_drivers.nats.config import NatsConfig
from loadgen_drivers.nats.naming import subjects
from loadgen_drivers.nats.stamp import MSG_ID_HEADER, STAMP_HEADER, stamp_header

log = logging.getLogger("loadgen.nats")

HANDOFF_SIZE = 256
"""A burst longer than this is handed to the loop in parts, so publishing starts early."""
SETUP_TIMEOUT_S = 15.0
FULL_WINDOW_TIMEOUT_S = 30.0
CLOSE_TIMEOUT_S = 5.0
NO_RESPONDERS = "503"

Item = tuple[str, bytes, dict[str, str] | None, OnDone]


class NatsProducer(CallbackAcks):
    def __init__(
        self, loop_thread: LoopThread, connection: Client, topic: str, partitions: int,
        config: NatsConfig,
    ) -> None:  # fmt: skip
        super().__init__()
        self._thread = loop_thread
        self._nc = connection
        self._subjects = subjects(topic, partitions)
        self._round_robin = 0
        self._window = config.max_pending
        self._dedup = config.msg_id_dedup
        self._stamped = Prefixer().stamped
        self._buffer: list[Item] = []
        self._batches: deque[list[Item]] = deque()
        self._outstanding: dict[str, OnDone] = {}  # by reply subject; loop thread only
        self._sequence = 0
        self._pumping = False
        self._task: asyncio.Future | None = None
        self._prefix = connection.new_inbox() + "."
        self._subscription = loop_thread.run(
            connection.subscribe(self._prefix + "*", cb=self._on_ack), SETUP_TIMEOUT_S
        )

    # -- the sending thread ---------------------------------------------------------------------
    def send(
        self, key: bytes | None, payload: bytes, on_done: OnDone, message_id: int, intended_ns: int
    ) -> None:
        headers = None
        if len(payload) >= PREFIX_BYTES:
            payload = self._stamped(payload, time_ns(), message_id, intended_ns)
        else:
            headers = {STAMP_HEADER: stamp_header(time_ns(), message_id, intended_ns)}
        if self._dedup:
            headers = {**(headers or {}), MSG_ID_HEADER: str(message_id)}
        self._add(payload, key, on_done, headers)

    def prefixed_send(self) -> PrefixedSend | None:
        """The producer loop stamps payloads and calls :meth:`_add` itself, unless each message
        needs its id in a header (``msgIdDedup``)."""
        return None if self._dedup else PrefixedSend(self._add, (VALUE, KEY, ACK))

    def _add(
        self, payload: bytes, key: bytes | None, on_done: OnDone,
        headers: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        """Buffer one stamped message for the loop, once the window has room for it."""
        if self.sent - self.completed >= self._window and not self._wait_for_room():
            on_done(DriverError("nats", f"no PubAck for {FULL_WINDOW_TIMEOUT_S:.0f} s"))
            return
        names = self._subjects
        if key is None:
            subject = names[self._round_robin % len(names)]
            self._round_robin += 1
        else:
            subject = names[crc32(key) % len(names)]
        self.sent += 1
        buffer = self._buffer
        buffer.append((subject, payload, headers, on_done))
        if len(buffer) >= HANDOFF_SIZE:
            self._hand_off()

    def _hand_off(self) -> None:
        """Give the buffered messages to the loop: one thread hop per batch."""
        if self._buffer:
            self._batches.append(self._buffer)
            self._buffer = []
            self._thread.call(self._start_pump)

    def _wait_for_room(self) -> bool:
        self._hand_off()
        deadline = time.monotonic() + FULL_WINDOW_TIMEOUT_S
        while self.sent - self.completed >= self._window:
            if time.monotonic() > deadline:
                return False
            time.sleep(self.FLUSH_CHECK_S / 4)
        return True

    def poll(self, timeout_s: float = 0.0) -> None:
        self._hand_off()
        super().poll(timeout_s)

    def flush(self, timeout_s: float) -> int:
        self._hand_off()
        return super().flush(timeout_s)

    def close(self) -> None:
        left = self.flush(CLOSE_TIMEOUT_S)
        if left:
            log.warning("closing a producer with %d messages unacknowledged", left)
        try:
            self._thread.run(self._subscription.unsubscribe(), CLOSE_TIMEOUT_S)
        except Exception as error:  # a closed connection has nothing left to unsubscribe
            log.debug("unsubscribing the PubAck inbox: %r", error)

    # -- the loop thread ------------------------------------------------------------------------
    def _start_pump(self) -> None:
        if not self._pumping:
            self._pumping = True
            self._task = asyncio.ensure_future(self._pump())

    async def _pump(self) -> None:
        """Publish the handed batches in order (one task at a time per producer)."""
        publish = self._nc.publish
        outstanding = self._outstanding
        prefix = self._prefix
        sequence = self._sequence
        try:
            while self._batches:
                batch = self._batches.popleft()
                for index, (subject, payload, headers, on_done) in enumerate(batch):
                    sequence += 1
                    reply = prefix + str(sequence)
                    outstanding[reply] = on_done
                    try:
                        await publish(subject, payload, reply, headers)
                    except Exception as error:
                        self._fail(batch[index:], reply, error)
                        break
        finally:
            self._sequence = sequence
            self._pumping = False

    def _fail(self, items: list[Item], reply: str, error: Exception) -> None:
        failure = DriverError("nats", f"publish failed: {error!r}")
        self._outstanding.pop(reply, None)
        for _, _, _, on_done in items:
            self._settle(on_done, failure)

    def _settle(self, on_done: OnDone, error: DriverError | None) -> None:
        on_done(error)
        self.completed += 1

    async def _on_ack(self, msg: Msg) -> None:
        on_done = self._outstanding.pop(msg.subject, None)
        if on_done is None:
            return
        data = msg.data
        error = None
        if b'"error"' in data:
            error = DriverError("nats", f"the stream refused the message: {data.decode()}")
        elif not data and msg.headers and msg.headers.get("Status") == NO_RESPONDERS:
            error = DriverError("nats", "no stream answered (503 no responders)")
        on_done(error)
        self.completed += 1
