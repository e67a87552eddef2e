"""Hot-path latency capture: each message's latencies into HdrHistograms, its id into a column.

A recorder hands over, per ``take()``, the interval's histograms (microseconds, OMB's layout,
:mod:`loadgen.base.hdr_core`) and what the accounting needs per message: the acknowledged ids, each
delivery's id and partition (which the C engine instead accounts as it comes, in the
subscription's receipts: :func:`subscription_receipts`). So a snapshot merges a few sparse
histograms; it bins nothing.

Two engines record the same numbers: C (``loadgen.engine._hotpath``, built with the package on Linux
where a C compiler is found: setup.py builds it only where Python's ``perf_counter`` and
``time`` read the clocks it reads), which counts each latency into its bucket as it is measured,
and pure Python (the fallback, or with ``LOADGEN_PURE_PYTHON=1``), which appends raw values to
arrays and bins them at ``take()`` with numpy, bucket for bucket the same: an append plus its
share of the binning costs a small fraction of ``HdrHistogram.record_value``
(bench/results/memory-and-engine.md "Hot-path micro-benchmarks"). :data:`ProducerRecorder` and
:data:`ConsumerRecorder` are the one in use; :data:`ENGINE` says which.

Threading contract: the client's delivery thread (or the producer loop) records; the stats
thread calls ``take()``. The C engine records a message inside one C call, which no thread
switch splits. The Python engine swaps in fresh arrays without a lock: every append site
evaluates its value into a local first and then runs ``rec.field.append(value)`` (or
``frombytes``), and CPython switches threads only at eval-breaker points, of which there is
none between loading the array and calling its method, so an append lands either in the old
array (taken) or in the new one (next interval). ``tests/unit/test_recorder.py`` hammers both
from several threads. Counters that cannot be appended (bytes received, errors) only ever
grow, and readers take deltas, so no reset races a writer.

Both engines take the same arguments and fail the same way, recording nothing: every number
they are given or compute is an int64, or the call raises ``TypeError`` (not an integer) or
``OverflowError`` (out of range), and a negative publish latency or delay, or a partition out
of range (:data:`loadgen.engine.accounting.PARTITION_LIMIT`), raises ``ValueError``, before
anything is stored. A payload whose stamp gives no int64 latency is not loadgen's, or garbled:
the consumer recorders count it in ``foreign`` instead, so one such message cannot stop a
consumer thread. ``take()`` allocates what replaces the columns before it changes any of them.
"""

from __future__ import annotations

import os
import struct
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from time import perf_counter_ns, time_ns
from typing import TYPE_CHECKING, Any

import numpy as np

from loadgen.base import hdr
from loadgen.base.hdr_core import (
    END_TO_END,
    END_TO_END_FROM_INTENDED,
    END_TO_END_UNCORRECTED,
    PUBLISH,
    PUBLISH_DELAY,
    PUBLISH_FROM_INTENDED,
    Histogram,
)
from loadgen.driver_api.stamp import read_prefix
from loadgen.engine.accounting import PARTITION_LIMIT, Receipt

if TYPE_CHECKING:
    from loadgen.engine.skew import ClockTable

try:
    from loadgen.engine import _hotpath
except ImportError:  # built without a C compiler: the pure-Python engine
    _hotpath = None

DELIVERY = ("endToEnd", "endToEndFromIntended", "messageId", "partition")
"""The columns of the pure-Python engine's delivery rows; both latencies are receive wall
clock minus the producer's wall clock (send time, intended send time)."""
E2E, FROM_INTENDED, MESSAGE_ID, PARTITION = range(len(DELIVERY))
ACKNOWLEDGEMENT = ("publish", "publishFromIntended", "messageId")
"""The columns of the pure-Python engine's acknowledgement rows."""
PUBLISH_NS, PUBLISH_FROM_INTENDED_NS, ACKED_ID = range(len(ACKNOWLEDGEMENT))
UNSTAMPED_BELOW = -(2**62)
"""A latency below this belongs to a message without a send time
(:data:`loadgen.driver_api.NO_SEND_TIME_NS`): received, in no histogram, and not clock skew."""

Int64s = array | memoryview
"""int64 values: an ``array('q')`` from the pure-Python engine, a ``memoryview`` cast to ``q``
over the bytes the C engine hands over (no second copy)."""


@dataclass(frozen=True, slots=True)
class ProducerSample:
    """What one producer recorder captured since the previous ``take()``."""

    publish: Histogram
    publish_delay: Histogram
    publish_from_intended: Histogram
    acked_runs: Int64s
    """The message ids the broker acknowledged, in the order it did, as flat ``(first id,
    count)`` runs of consecutive ids: a few per producer while acknowledgements come in order."""
    errors: int

    @property
    def acked_count(self) -> int:
        return int(pairs(self.acked_runs)[:, 1].sum())

    def acked_ids(self) -> np.ndarray:
        """Every acknowledged id, in the order acknowledged."""
        runs = pairs(self.acked_runs)
        firsts, counts = runs[:, 0], runs[:, 1]
        offsets = np.arange(counts.sum(), dtype=np.int64) - np.repeat(
            np.cumsum(counts) - counts, counts
        )
        return np.repeat(firsts, counts) + offsets


@dataclass(frozen=True, slots=True)
class ConsumerSample:
    """What one consumer recorder captured since the previous ``take()``."""

    end_to_end: Histogram
    from_intended: Histogram
    uncorrected: Histogram | None
    """``endToEndUncorrected``, only while the clocks are corrected."""
    negative: int
    """Stamped deliveries whose (corrected) end-to-end latency was negative: clock skew."""
    negative_uncorrected: int
    identities: Int64s
    """Flat ``(message id, partition)`` pairs in arrival order; none where the subscription's
    receipts account them as they come (:func:`subscription_receipts`)."""
    received: int
    received_bytes: int


Ack = Callable[..., None]
"""One message's acknowledgement, as :meth:`PythonProducerRecorder.bind` makes it: the
``on_done`` a driver calls once, with the error (None when the broker acknowledged; positional
or ``error=``) and its client's own positional arguments."""

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


def _unrecordable(latencies: dict[str, int]) -> OverflowError | ValueError:
    """The error the C engine raises for the first of ``latencies`` (by name, in the order it
    checks them) that is not an int64 (``OverflowError``), or else that is negative."""
    for value in latencies.values():
        if not INT64_MIN <= value <= INT64_MAX:
            return OverflowError("latency does not fit in 64 bits")
    what, value = next((what, value) for what, value in latencies.items() if value < 0)
    return ValueError(f"{what} is negative: {value} ns")


def _joined(parts: Sequence[array]) -> array:
    """One array of ``parts`` (one, unless a failed take left some)."""
    if len(parts) == 1:
        return parts[0]
    joined = array("q")
    for part in parts:
        joined.extend(part)
    return joined


def pairs(flat: Int64s) -> np.ndarray:
    """Flat int64 pairs (:attr:`ProducerSample.acked_runs`, :attr:`ConsumerSample.identities`)
    as rows of two, without a copy."""
    return np.frombuffer(flat, dtype=np.int64).reshape(-1, 2)


def runs_of(ids: array | np.ndarray) -> array:
    """``ids`` as flat ``(first id, count)`` runs of consecutive ids, in their order."""
    values = np.asarray(ids, dtype=np.int64)
    if not len(values):
        return array("q")
    starts = np.flatnonzero(np.diff(values) != 1) + 1
    firsts = values[np.concatenate(([0], starts))]
    counts = np.diff(np.concatenate(([0], starts, [len(values)])))
    return array("q", np.column_stack((firsts, counts)).tobytes())


def _binned(metric: str, values: array) -> Histogram:
    return hdr.record_ns(metric, np.frombuffer(values, dtype=np.int64))


def _stamped_negatives(latencies: np.ndarray) -> int:
    return int(np.count_nonzero((latencies < 0) & (latencies > UNSTAMPED_BELOW)))


def _nonnegative_binned(metric: str, latencies: np.ndarray) -> Histogram:
    return hdr.record_ns(metric, latencies[latencies >= 0])


class PythonProducerRecorder:
    """Publish latency (ack − send), publish delay (send − intended), ack − intended and the
    ids acknowledged (which tell a lost message from one whose send failed).

    An acknowledgement's three values go in packed as one row (:data:`ACKNOWLEDGEMENT`), with
    one ``frombytes``, as the consumer's deliveries do: a thread switch after any call cannot
    put its latency in one interval and its id in the next."""

    __slots__ = ("_acknowledged", "_carried", "_errors_taken", "acks", "errors", "publish_delay")

    def __init__(self) -> None:
        self.publish_delay = array("q")
        self.acks = array("q")
        self.errors = 0
        self._errors_taken = 0
        self._carried: list[tuple[array, array]] = []
        self._acknowledged = self._acknowledge

    def bind(self, message_id: int, intended_ns: int, sent_ns: int) -> Ack:
        """Record the publish delay of a message sent now; return its acknowledgement."""
        try:
            _INT64S_3(message_id, intended_ns, sent_ns)
        except struct.error:
            raise _not_int64(message_id, intended_ns, sent_ns) from None
        delay = sent_ns - intended_ns
        if not 0 <= delay <= INT64_MAX:
            raise _unrecordable({"publish delay": delay})
        self.publish_delay.append(delay)
        return partial(self._acknowledged, message_id, intended_ns, sent_ns)

    @property
    def acked_count(self) -> int:
        """Acknowledgements recorded since the last ``take()`` (read by the progress counters)."""
        rows = len(self.acks) + sum(len(acks) for _, acks in self._carried)
        return rows // len(ACKNOWLEDGEMENT)

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
            if not (0 <= latency <= INT64_MAX and 0 <= corrected <= INT64_MAX):
                raise _unrecordable(  # stored in no column
                    {
                        "publish latency": latency,
                        "publish latency from the intended time": corrected,
                    }
                )
            row = _INT64S_3(latency, corrected, message_id)
            self.acks.frombytes(row)
        else:
            self.errors += 1

    def take(self) -> ProducerSample:
        """The interval's histograms, binned from the columns swapped out here. Columns a
        failed take swapped out are kept and binned by the next one: nothing is lost."""
        fresh = array("q"), array("q")
        self._carried.append((self.publish_delay, self.acks))
        self.publish_delay, self.acks = fresh
        delay, acks = (_joined(columns) for columns in zip(*self._carried, strict=True))
        rows = np.frombuffer(acks, dtype=np.int64).reshape(-1, len(ACKNOWLEDGEMENT))
        errors_now = self.errors
        sample = ProducerSample(
            hdr.record_ns(PUBLISH, rows[:, PUBLISH_NS]),
            _binned(PUBLISH_DELAY, delay),
            hdr.record_ns(PUBLISH_FROM_INTENDED, rows[:, PUBLISH_FROM_INTENDED_NS]),
            runs_of(rows[:, ACKED_ID]),
            errors_now - self._errors_taken,
        )
        self._carried, self._errors_taken = [], errors_now
        return sample


class PythonConsumerRecorder:
    """Per delivery: end-to-end latency (receive wall clock − send wall clock), the latency from
    the intended send time, the message id and the partition; and bytes received.

    The four go in packed as one row of bytes, with one ``frombytes``, which runs no bytecode
    and so cannot be split by ``take()``: a delivery's latency and its id always land in the same
    interval, in the same row, which the per-message clock correction relies on. Packing checks
    every value first, so a value that is not an int64 stores no part of its row.
    """

    __slots__ = ("_bytes_taken", "_carried", "_clocks", "bytes_total", "deliveries", "foreign")

    def __init__(self, receipts: None = None) -> None:
        """``receipts`` is the C engine's (:func:`subscription_receipts` gives none here)."""
        self.deliveries = array("q")
        self.bytes_total = 0
        self.foreign = 0
        """Stamped payloads skipped so far because their times give no int64 latency."""
        self._bytes_taken = 0
        self._carried: list[array] = []
        self._clocks: ClockTable | None = None

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
        if not -1 <= partition < PARTITION_LIMIT:
            raise ValueError(f"partition {partition} is not -1 or in [0, {PARTITION_LIMIT})")
        self.deliveries.frombytes(row)
        self.bytes_total += size

    def on_prefixed(self, payload: bytes, partition: int) -> bool:
        """A delivery whose payload starts with loadgen's stamp; False, recording nothing, when
        it does not (:func:`loadgen.driver_api.prefixed_deliveries`). True for a stamp whose
        times give no int64 latency too, counted in :attr:`foreign`, so that no driver reads
        it again and fails on it."""
        stamp = read_prefix(payload) if isinstance(payload, bytes) else None
        if stamp is None:
            return False
        try:
            self.on_message(payload, *stamp, partition)
        except OverflowError:
            if not INT64_MIN <= partition <= INT64_MAX:  # the driver's value, not the stamp's
                raise
            self.foreign += 1
        return True

    def on_prefixed_many(self, payloads: list, start: int, partition: int) -> int:
        """``payloads[start:]`` recorded as :meth:`on_prefixed` does, up to the first without
        the stamp; its index (``len(payloads)`` when every one had it)."""
        index = max(start, 0)
        while index < len(payloads) and self.on_prefixed(payloads[index], partition):
            index += 1
        return index

    def correct_clocks(self, table: ClockTable) -> None:
        """Correct the latencies taken from now on by ``table``'s offsets, and record the
        uncorrected end-to-end latency too."""
        self._clocks = table

    def discard(self) -> int:
        """Drop what was recorded (the readiness probe's deliveries); how many there were."""
        return self.take().received

    @property
    def received(self) -> int:
        """Deliveries recorded since the last ``take()`` (read by the progress counters)."""
        return (len(self.deliveries) + sum(map(len, self._carried))) // len(DELIVERY)

    def take(self) -> ConsumerSample:
        """The interval's histograms and identities, from the rows swapped out here. Rows a
        failed take swapped out are kept and taken by the next one: nothing is lost."""
        fresh = array("q")
        self._carried.append(self.deliveries)  # what is appended until the swap is in it too
        self.deliveries = fresh
        rows = np.frombuffer(_joined(self._carried), dtype=np.int64).reshape(-1, len(DELIVERY))
        raw, raw_from_intended = rows[:, E2E], rows[:, FROM_INTENDED]
        e2e, from_intended, uncorrected = raw, raw_from_intended, None
        if self._clocks is not None:
            shifts = self._clocks.shifts(rows[:, MESSAGE_ID])
            e2e, from_intended = raw - shifts, raw_from_intended - shifts
            uncorrected = _nonnegative_binned(END_TO_END_UNCORRECTED, raw)
        total = self.bytes_total
        sample = ConsumerSample(
            _nonnegative_binned(END_TO_END, e2e),
            _nonnegative_binned(END_TO_END_FROM_INTENDED, from_intended),
            uncorrected,
            _stamped_negatives(e2e),
            _stamped_negatives(raw) if self._clocks is not None else 0,
            array("q", rows[:, MESSAGE_ID:].tobytes()),
            len(rows),
            total - self._bytes_taken,
        )
        self._carried, self._bytes_taken = [], total
        return sample


def _int64s(taken: bytes) -> memoryview:
    """A C column's values as int64s, without copying them again."""
    return memoryview(taken).cast("q")


def _histogram(metric: str, taken: tuple[bytes, bytes]) -> Histogram:
    """A C histogram's non-empty buckets as a sparse :class:`Histogram`."""
    index, counts = taken
    return Histogram(metric, np.frombuffer(index, np.int64), np.frombuffer(counts, np.int64))


def core_layout(metric: str) -> tuple[int, int, int, int, int, int]:
    """``metric``'s bucket layout as the C cores take it."""
    layout = hdr.layout(metric)
    return (
        layout.highest,
        layout.unit_magnitude,
        layout.sub_bucket_half_count_magnitude,
        layout.sub_bucket_half_count,
        layout.sub_bucket_mask,
        layout.counts_len,
    )


class CompiledProducerRecorder:
    """:class:`PythonProducerRecorder`'s interface on the C engine."""

    def __init__(self) -> None:
        assert _hotpath is not None, "loadgen.engine._hotpath is not built"
        self._core = core = _hotpath.ProducerCore(core_layout(PUBLISH))
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
        publish, delay, corrected, acked = self._core.take()  # all of it, or an error
        errors_now = self._core.errors
        sample = ProducerSample(
            _histogram(PUBLISH, publish),
            _histogram(PUBLISH_DELAY, delay),
            _histogram(PUBLISH_FROM_INTENDED, corrected),
            _int64s(acked),
            errors_now - self._errors_taken,
        )
        self._errors_taken = errors_now
        return sample


class CompiledConsumerRecorder:
    """:class:`PythonConsumerRecorder`'s interface on the C engine; given its subscription's
    receipts, it accounts each delivery's id as it comes instead of handing it over."""

    def __init__(self, receipts: Receipts | None = None) -> None:
        assert _hotpath is not None, "loadgen.engine._hotpath is not built"
        self._core = core = _hotpath.ConsumerCore(core_layout(END_TO_END), receipts)
        self.on_message: Callable[[bytes, int, int, int, int], None] = core.on_message
        self.on_prefixed: Callable[[bytes, int], bool] = core.on_prefixed
        self.on_prefixed_many: Callable[[list, int, int], int] = core.on_prefixed_many
        self._bytes_taken = 0
        self._corrected = False

    def correct_clocks(self, table: ClockTable) -> None:
        """Correct the latencies of deliveries from now on by ``table``'s offsets, and record
        the uncorrected end-to-end latency too."""
        self._core.correct_clocks(table.shift_by_producer().tobytes())
        self._corrected = True

    @property
    def bytes_total(self) -> int:
        return self._core.bytes_total

    @property
    def foreign(self) -> int:
        """Stamped payloads skipped so far because their times give no int64 latency."""
        return self._core.foreign

    @property
    def received(self) -> int:
        return self._core.received

    def discard(self) -> int:
        """Drop what was recorded (the readiness probe's deliveries) and the order seen; how
        many deliveries there were (the receipts are forgotten by their owner)."""
        received = self.take().received
        self._core.forget_order()
        return received

    def take(self) -> ConsumerSample:
        taken = self._core.take()  # all of it, or an error
        e2e, from_intended, uncorrected, identities, negative, negative_raw, received = taken
        total = self._core.bytes_total
        sample = ConsumerSample(
            _histogram(END_TO_END, e2e),
            _histogram(END_TO_END_FROM_INTENDED, from_intended),
            _histogram(END_TO_END_UNCORRECTED, uncorrected) if self._corrected else None,
            negative,
            negative_raw,
            _int64s(identities),
            received,
            total - self._bytes_taken,
        )
        self._bytes_taken = total
        return sample


Receipts = Any
"""``loadgen.engine._hotpath.Receipts``: what one subscription's consumers on this worker received,
kept as they receive it (C, a window of bits per producer)."""


def subscription_receipts() -> Receipts | None:
    """New receipts for one subscription's consumers, or None on the pure-Python engine,
    whose consumers hand each delivery's id over to :class:`loadgen.engine.accounting.Ledger`."""
    return _hotpath.Receipts() if COMPILED else None


def receipt_of(receipts: Receipts) -> Receipt:
    """What ``receipts`` accounted since it was last taken."""
    ranges, duplicates, late, unsure, unidentified = receipts.take()
    return Receipt(
        np.frombuffer(ranges, np.int64).reshape(-1, 2),
        np.frombuffer(duplicates, np.int64),
        np.frombuffer(late, np.int64),
        np.frombuffer(unsure, np.int64).reshape(-1, 2),
        unidentified,
    )


PURE_PYTHON_ENV = "LOADGEN_PURE_PYTHON"
"""Set (to anything but ``0``), the process records in pure Python though C is built."""
PURE_PYTHON = os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0")
COMPILED = _hotpath is not None and not PURE_PYTHON
ENGINE = "c" if COMPILED else "python"
"""Which engine records: ``c``, or ``python`` (no compiled module, or ``LOADGEN_PURE_PYTHON``)."""
ProducerRecorder: type[PythonProducerRecorder] | type[CompiledProducerRecorder] = (
    CompiledProducerRecorder if COMPILED else PythonProducerRecorder
)
ConsumerRecorder: type[PythonConsumerRecorder] | type[CompiledConsumerRecorder] = (
    CompiledConsumerRecorder if COMPILED else PythonConsumerRecorder
)
