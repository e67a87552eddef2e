"""Hot-path latency capture: raw nanosecond values appended to arrays, binned at interval end.

Appending an int to an ``array('q')`` costs ~25 ns; ``HdrHistogram.record_value`` costs ~580 ns.
So the hot path only appends, and :func:`loadgen.hdr.record_ns` bins a whole interval with numpy.

Threading contract: the client's delivery thread (or the producer loop) appends; the stats thread
calls ``take()``, which swaps in fresh arrays. The swap is safe without a lock because every
append site evaluates its value into a local first and then runs ``rec.field.append(value)``:
CPython switches threads only at eval-breaker points, and there is none between loading the
array and calling its ``append``, so an append lands either in the old array (taken) or in the
new one (next interval). ``tests/unit/test_recorder.py`` hammers this from several threads.
Counters that cannot be appended (bytes received, errors) only ever grow, and readers take
deltas, so no reset races a writer.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from time import perf_counter_ns, time_ns

DELIVERY = ("endToEnd", "endToEndFromIntended", "messageId", "partition")
"""The columns of a consumer's delivery row; both latencies are receive wall clock minus the
producer's wall clock (send time, intended send time), so a clock correction shifts both."""
E2E, FROM_INTENDED, MESSAGE_ID, PARTITION = range(len(DELIVERY))


@dataclass(frozen=True, slots=True)
class ProducerSample:
    """What one producer recorder captured since the previous ``take()`` (nanoseconds)."""

    publish: array
    publish_delay: array
    publish_from_intended: array
    acked: array
    """The message ids the broker acknowledged."""
    errors: int


@dataclass(frozen=True, slots=True)
class ConsumerSample:
    """What one consumer recorder captured since the previous ``take()``."""

    deliveries: array
    """Flat :data:`DELIVERY` rows in arrival order."""
    received_bytes: int

    @property
    def received(self) -> int:
        return len(self.deliveries) // len(DELIVERY)


class ProducerRecorder:
    """Publish latency (ack − send), publish delay (send − intended), ack − intended and the
    ids acknowledged (which tell a lost message from one whose send failed)."""

    __slots__ = (
        "_errors_taken",
        "acked",
        "errors",
        "publish",
        "publish_delay",
        "publish_from_intended",
    )

    def __init__(self) -> None:
        self.publish = array("q")
        self.publish_delay = array("q")
        self.publish_from_intended = array("q")
        self.acked = array("q")
        self.errors = 0
        self._errors_taken = 0

    def on_done(
        self,
        message_id: int,
        intended_ns: int,
        sent_ns: int,
        error: BaseException | None,
        *_: object,
    ) -> None:
        """Delivery callback, bound per message: ``partial(on_done, message_id, intended, sent)``
        (``intended`` and ``sent`` on the ``perf_counter_ns`` clock)."""
        now = perf_counter_ns()
        if error is None:
            latency = now - sent_ns
            self.publish.append(latency)
            corrected = now - intended_ns
            self.publish_from_intended.append(corrected)
            self.acked.append(message_id)
        else:
            self.errors += 1

    def take(self) -> ProducerSample:
        publish, self.publish = self.publish, array("q")
        delay, self.publish_delay = self.publish_delay, array("q")
        corrected, self.publish_from_intended = self.publish_from_intended, array("q")
        acked, self.acked = self.acked, array("q")
        errors_now = self.errors
        errors, self._errors_taken = errors_now - self._errors_taken, errors_now
        return ProducerSample(publish, delay, corrected, acked, errors)


class ConsumerRecorder:
    """Per delivery: end-to-end latency (receive wall clock − send wall clock), the latency from
    the intended send time, the message id and the partition; and bytes received.

    The four go in with one ``extend`` of a tuple, which runs no bytecode and so cannot be split
    by ``take()``: a delivery's latency and its id always land in the same interval, in the same
    row, which the per-message clock correction (:mod:`loadgen.worker.skew`) relies on.
    """

    __slots__ = ("_bytes_taken", "bytes_total", "deliveries")

    def __init__(self) -> None:
        self.deliveries = array("q")
        self.bytes_total = 0
        self._bytes_taken = 0

    def on_message(
        self, payload: bytes, sent_ns: int, message_id: int, intended_ns: int, partition: int
    ) -> None:
        """Consumer callback, handed to ``Driver.create_consumer`` as it is."""
        now = time_ns()
        row = (now - sent_ns, now - intended_ns, message_id, partition)
        self.deliveries.extend(row)
        self.bytes_total += len(payload)

    @property
    def received(self) -> int:
        """Deliveries recorded since the last ``take()`` (read by the progress counters)."""
        return len(self.deliveries) // len(DELIVERY)

    def take(self) -> ConsumerSample:
        deliveries, self.deliveries = self.deliveries, array("q")
        total = self.bytes_total
        received_bytes, self._bytes_taken = total - self._bytes_taken, total
        return ConsumerSample(deliveries, received_bytes)
