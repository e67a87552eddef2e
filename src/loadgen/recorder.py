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


@dataclass(frozen=True, slots=True)
class ProducerSample:
    """What one producer recorder captured since the previous ``take()`` (nanoseconds)."""

    publish: array
    publish_delay: array
    publish_from_intended: array
    errors: int


@dataclass(frozen=True, slots=True)
class ConsumerSample:
    """What one consumer recorder captured since the previous ``take()``."""

    end_to_end: array
    received_bytes: int


class ProducerRecorder:
    """Publish latency (ack − send), publish delay (send − intended) and ack − intended."""

    __slots__ = ("_errors_taken", "errors", "publish", "publish_delay", "publish_from_intended")

    def __init__(self) -> None:
        self.publish = array("q")
        self.publish_delay = array("q")
        self.publish_from_intended = array("q")
        self.errors = 0
        self._errors_taken = 0

    def on_done(
        self, intended_ns: int, sent_ns: int, error: BaseException | None, *_: object
    ) -> None:
        """Delivery callback, bound per message: ``partial(on_done, intended, sent)``."""
        now = perf_counter_ns()
        if error is None:
            latency = now - sent_ns
            self.publish.append(latency)
            corrected = now - intended_ns
            self.publish_from_intended.append(corrected)
        else:
            self.errors += 1

    def take(self) -> ProducerSample:
        publish, self.publish = self.publish, array("q")
        delay, self.publish_delay = self.publish_delay, array("q")
        corrected, self.publish_from_intended = self.publish_from_intended, array("q")
        errors_now = self.errors
        errors, self._errors_taken = errors_now - self._errors_taken, errors_now
        return ProducerSample(publish, delay, corrected, errors)


class ConsumerRecorder:
    """End-to-end latency (receive wall clock − send wall clock) and bytes received."""

    __slots__ = ("_bytes_taken", "bytes_total", "end_to_end")

    def __init__(self) -> None:
        self.end_to_end = array("q")
        self.bytes_total = 0
        self._bytes_taken = 0

    def on_message(self, payload: bytes, sent_ns: int, *_: object) -> None:
        """Consumer callback, handed to ``Driver.create_consumer`` as it is."""
        latency = time_ns() - sent_ns
        self.end_to_end.append(latency)
        self.bytes_total += len(payload)

    def take(self) -> ConsumerSample:
        e2e, self.end_to_end = self.end_to_end, array("q")
        total = self.bytes_total
        received_bytes, self._bytes_taken = total - self._bytes_taken, total
        return ConsumerSample(e2e, received_bytes)
