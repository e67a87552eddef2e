"""Hot-path latency capture: raw nanosecond values appended to arrays, binned at interval end.

Appending an int to an ``array('q')`` costs ~25 ns; ``HdrHistogram.record_value`` costs ~580 ns.
So the hot path only appends, and :func:`loadgen.hdr.record_ns` bins a whole interval with numpy.

Two engines record the same values: C (``loadgen._hotpath``, built with the package on Linux
where a C compiler is found: setup.py builds it only where Python's ``perf_counter`` and
``time`` read the clocks it reads) and pure Python (the fallback, or with
``LOADGEN_PURE_PYTHON=1``).
:data:`ProducerRecorder` and :data:`ConsumerRecorder` are the one in use; :data:`ENGINE` says
which. In C, binding a message's acknowledgement is one small object instead of a
``functools.partial`` and recording is a few stores instead of a Python method; the memory
driver's whole send path measured ~40 % less CPU per message (bench/RESULTS.md).

Threading contract: the client's delivery thread (or the producer loop) appends; the stats thread
calls ``take()``, which swaps in fresh arrays. The swap is safe without a lock because every
append site evaluates its value into a local first and then runs ``rec.field.append(value)``
(or ``frombytes``): CPython switches threads only at eval-breaker points, and there is none
between loading the array and calling its method, so an append lands either in the old array
(taken) or in the new one (next interval). The C engine records a message inside one C call,
which no thread switch splits. ``tests/unit/test_recorder.py`` hammers both from several threads.
Counters that cannot be appended (bytes received, errors) only ever grow, and readers take
deltas, so no reset races a writer.

Both engines take the same arguments and fail the same way, recording nothing: every number
they are given or store is an int64, or the call raises ``TypeError`` (not an integer) or
``OverflowError`` (out of range) before any column changes; a row is stored whole or not at
all. ``take()`` allocates what replaces the columns before it changes any of them.
"""

from __future__ import annotations

import os
import struct
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from time import perf_counter_ns, time_ns

try:
    from loadgen import _hotpath
except ImportError:  # built without a C compiler: the pure-Python engine
    _hotpath = None

DELIVERY = ("endToEnd", "endToEndFromIntended", "messageId", "partition")
"""The columns of a consumer's delivery row; both latencies are receive wall clock minus the
producer's wall clock (send time, intended send time), so a clock correction shifts both."""
E2E, FROM_INTENDED, MESSAGE_ID, PARTITION = range(len(DELIVERY))


Int64s = array | memoryview
"""int64 values: an ``array('q')`` from the pure-Python engine, a ``memoryview`` cast to ``q``
over the bytes the C engine hands over (no second copy)."""


@dataclass(frozen=True, slots=True)
class ProducerSample:
    """What one producer recorder captured since the previous ``take()`` (nanoseconds)."""

    publish: Int64s
    publish_delay: Int64s
    publish_from_intended: Int64s
    acked: Int64s
    """The message ids the broker acknowledged."""
    errors: int


@dataclass(frozen=True, slots=True)
class ConsumerSample:
    """What one consumer recorder captured since the previous ``take()``."""

    deliveries: Int64s
    """Flat :data:`DELIVERY` rows in arrival order."""
    received_bytes: int

    @property
    def received(self) -> int:
        return len(self.deliveries) // len(DELIVERY)


Ack = Callable[..., None]
"""One message's acknowledgement, as :meth:`ProducerRecorder.bind` makes it: the ``on_done`` a
driver calls once, with the error (None when the broker acknowledged; positional or
``error=``) and its client's own positional arguments."""

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

_INT64S_3 = struct.Struct("3q").pack
_INT64S_4 = struct.Struct("4q").pack
"""Packing checks in one C call that every value is an int64, as the C engine converts them,
before anything is stored (``struct.error`` otherwise; :func:`_not_int64` names the error)."""


def _not_int64(*values: object) -> TypeError | OverflowError:
    """The error the C engine raises for ``values`` (its inputs in the order it converts them):
    ``TypeError`` or ``OverflowError`` for the first that is not an int64, else
    ``OverflowError`` for a latency computed from them that is not."""
    for value in values:
        try:
            array("q", (value,))
        except (TypeError, OverflowError) as error:
            return error
    return OverflowError("latency does not fit in 64 bits")


class PythonProducerRecorder:
    """Publish latency (ack − send), publish delay (send − intended), ack − intended and the
    ids acknowledged (which tell a lost message from one whose send failed)."""

    __slots__ = (
        "_acknowledged",
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
        self._acknowledged = self._acknowledge

    def bind(self, message_id: int, intended_ns: int, sent_ns: int) -> Ack:
        """Record the publish delay of a message sent now; return its acknowledgement."""
        try:
            _INT64S_3(message_id, intended_ns, sent_ns)
        except struct.error:
            raise _not_int64(message_id, intended_ns, sent_ns) from None
        delay = sent_ns - intended_ns
        self.publish_delay.append(delay)  # OverflowError, and nothing stored, past 64 bits
        return partial(self._acknowledged, message_id, intended_ns, sent_ns)

    @property
    def acked_count(self) -> int:
        """Acknowledgements recorded since the last ``take()`` (read by the progress counters)."""
        return len(self.publish)

    def on_done(
        self,
        message_id: int,
        intended_ns: int,
        sent_ns: int,
        error: BaseException | None,
        *_: object,
    ) -> None:
        """A message's fate, unbound (:meth:`bind`'s acknowledgement is this with the first
        three given), with ``intended`` and ``sent`` on the ``perf_counter_ns`` clock."""
        try:
            _INT64S_3(message_id, intended_ns, sent_ns)
        except struct.error:
            raise _not_int64(message_id, intended_ns, sent_ns) from None
        self._acknowledge(message_id, intended_ns, sent_ns, error)

    def _acknowledge(
        self,
        message_id: int,
        intended_ns: int,
        sent_ns: int,
        error: BaseException | None,
        *_: object,
    ) -> None:
        """:meth:`on_done` once its three numbers are known to be int64s (:meth:`bind` checked
        them), so only the latencies computed from them can overflow."""
        now = perf_counter_ns()
        if error is None:
            latency, corrected = now - sent_ns, now - intended_ns
            if not (INT64_MIN <= latency <= INT64_MAX and INT64_MIN <= corrected <= INT64_MAX):
                raise OverflowError("latency does not fit in 64 bits")  # stored in no column
            self.publish.append(latency)
            self.publish_from_intended.append(corrected)
            self.acked.append(message_id)
        else:
            self.errors += 1

    def take(self) -> ProducerSample:
        # everything is allocated before any column is swapped: a failure changes nothing
        fresh = array("q"), array("q"), array("q"), array("q")
        errors_now = self.errors
        sample = ProducerSample(
            self.publish,
            self.publish_delay,
            self.publish_from_intended,
            self.acked,
            errors_now - self._errors_taken,
        )
        self.publish, self.publish_delay, self.publish_from_intended, self.acked = fresh
        self._errors_taken = errors_now
        return sample


class PythonConsumerRecorder:
    """Per delivery: end-to-end latency (receive wall clock − send wall clock), the latency from
    the intended send time, the message id and the partition; and bytes received.

    The four go in packed as one row of bytes, with one ``frombytes``, which runs no bytecode
    and so cannot be split by ``take()``: a delivery's latency and its id always land in the same
    interval, in the same row, which the per-message clock correction
    (:mod:`loadgen.worker.skew`) relies on. Packing checks every value first, so a value that is
    not an int64 stores no part of its row.
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
        size = len(payload)
        now = time_ns()
        try:
            _INT64S_4(sent_ns, message_id, intended_ns, partition)
            row = _INT64S_4(now - sent_ns, now - intended_ns, message_id, partition)
        except struct.error:
            raise _not_int64(sent_ns, message_id, intended_ns, partition) from None
        self.deliveries.frombytes(row)
        self.bytes_total += size

    @property
    def received(self) -> int:
        """Deliveries recorded since the last ``take()`` (read by the progress counters)."""
        return len(self.deliveries) // len(DELIVERY)

    def take(self) -> ConsumerSample:
        # everything is allocated before the column is swapped: a failure changes nothing
        fresh = array("q")
        total = self.bytes_total
        sample = ConsumerSample(self.deliveries, total - self._bytes_taken)
        self.deliveries = fresh
        self._bytes_taken = total
        return sample


def _int64s(taken: bytes) -> memoryview:
    """A C column's values as int64s, without copying them again."""
    return memoryview(taken).cast("q")


class CompiledProducerRecorder:
    """:class:`PythonProducerRecorder`'s interface on the C engine."""

    def __init__(self) -> None:
        assert _hotpath is not None, "loadgen._hotpath is not built"
        self._core = core = _hotpath.ProducerCore()
        self.bind: Callable[[int, int, int], Ack] = core.bind
        self.on_done: Callable[..., None] = core.on_done
        self._errors_taken = 0

    @property
    def errors(self) -> int:
        return self._core.errors

    @property
    def acked_count(self) -> int:
        return self._core.acked_count

    def take(self) -> ProducerSample:
        publish, delay, corrected, acked = self._core.take()  # all four columns, or an error
        errors_now = self._core.errors
        sample = ProducerSample(
            _int64s(publish),
            _int64s(delay),
            _int64s(corrected),
            _int64s(acked),
            errors_now - self._errors_taken,
        )
        self._errors_taken = errors_now
        return sample


class CompiledConsumerRecorder:
    """:class:`PythonConsumerRecorder`'s interface on the C engine."""

    def __init__(self) -> None:
        assert _hotpath is not None, "loadgen._hotpath is not built"
        self._core = core = _hotpath.ConsumerCore()
        self.on_message: Callable[[bytes, int, int, int, int], None] = core.on_message
        self._bytes_taken = 0

    @property
    def bytes_total(self) -> int:
        return self._core.bytes_total

    @property
    def received(self) -> int:
        return self._core.received

    def take(self) -> ConsumerSample:
        deliveries = _int64s(self._core.take())
        total = self._core.bytes_total
        sample = ConsumerSample(deliveries, total - self._bytes_taken)
        self._bytes_taken = total
        return sample


COMPILED = _hotpath is not None and os.environ.get("LOADGEN_PURE_PYTHON", "") in ("", "0")
ENGINE = "c" if COMPILED else "python"
"""Which engine records: ``c``, or ``python`` (no compiled module, or ``LOADGEN_PURE_PYTHON``)."""
ProducerRecorder: type[PythonProducerRecorder] | type[CompiledProducerRecorder] = (
    CompiledProducerRecorder if COMPILED else PythonProducerRecorder
)
ConsumerRecorder: type[PythonConsumerRecorder] | type[CompiledConsumerRecorder] = (
    CompiledConsumerRecorder if COMPILED else PythonConsumerRecorder
)
