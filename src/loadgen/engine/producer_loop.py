"""The open-loop producer loop: one thread drives every producer of the worker.

One thread, because the GIL lets only one send run at a time anyway; more threads would add
switching, not throughput (throughput comes from worker processes). The loop keeps the
absolute schedule of :mod:`loadgen.engine.rate`: it sends everything due, in bursts, then waits for
the
next intended time inside a producer's ``poll(wait)``, so acknowledgements that arrive meanwhile
are timed on arrival (a plain sleep would time them when the loop wakes up, up to the whole wait
later). With several producers the blocking poll rotates over them; the others are polled
without blocking at least every millisecond.

Per message it does only: read the clock, pick key and payload by index, derive the message id
(the producer's id base plus its sequence, both from the index of the round robin), bind the
acknowledgement (:meth:`~loadgen.engine.recorder.PythonProducerRecorder.bind`, which also records
the
publish delay), call ``send`` with the intended time moved to the wall clock by one offset taken
at loop start; or, compiled and for drivers that opt in, stamp the payload and call their
client directly, in C (:mod:`loadgen.engine.burst`). Everything else is hoisted out of the loop.

With ``max_in_flight`` (the workload's ``producerMaxInFlight``) each producer has at most that
many messages sent and not yet acknowledged; 1 is synchronous publishing (send, wait for the
ack, send the next). The window is checked once per burst, which is then cut to the messages
that fit, so the loop without a window does no extra work per message. A full window waits for
an ack: inside ``poll(wait)`` for clients that deliver acks there (Kafka, RabbitMQ), on an
event the ack sets for clients that acknowledge on a thread of their own
(:class:`~loadgen.driver_api.CallbackAcks`: Pulsar, Pravega). The schedule stays absolute, so the
time a message waits for its slot shows up as publish delay and in the from-intended latencies.

While it runs, the collector is set for it (:func:`collector_set_for_load`): with the
pure-Python recorder each message allocates a callback or two that live until acknowledged (the
C recorder's acknowledgements are not tracked by the collector). A burst of them crosses the young
generation's default threshold (700), and the in-flight callbacks, promoted generation by
generation, would be walked again by every older collection while freeing next to nothing
(bench/results/pulsar.md "Pulsar producer path"). The heap built before the loop is frozen too, so a
full collection does not walk every module, config and client object.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from time import perf_counter_ns, time_ns

from loadgen.driver_api import BlockingSends, CallbackAcks, Producer
from loadgen.engine.accounting import SEQ_BITS
from loadgen.engine.burst import burst_sender
from loadgen.engine.keys import KeySource
from loadgen.engine.rate import Schedule
from loadgen.engine.recorder import Ack, CompiledProducerRecorder, PythonProducerRecorder

BURST = 512
"""Messages sent between two checks of the stop flag and two rounds of client polling (one
when a producer's sends block: :class:`~loadgen.driver_api.BlockingSends`)."""
POLL_EVERY_NS = 1_000_000
MAX_WAIT_S = 0.001
"""Longest single wait: bounds how late the loop notices :meth:`ProducerLoop.stop`."""
YOUNG_GENERATION = 100_000
"""Tracked objects allocated, net of those freed, that trigger a young collection while the loop
sends. In flight they come and go at the same rate, so only a real build-up (garbage in cycles,
a growing backlog of callbacks) reaches it; its collection then takes a few milliseconds."""


@contextmanager
def collector_set_for_load() -> Iterator[None]:
    """Freeze the heap built so far and raise the young threshold; both undone on exit.

    A collector switched off (threshold 0) stays off; a higher threshold is kept. The thresholds
    are put back only if still as set here: two loops in one process may stop in either order,
    and the second must not restore the raised value the first left it.
    """
    thresholds = gc.get_threshold()
    raised = (
        (max(thresholds[0], YOUNG_GENERATION), *thresholds[1:]) if thresholds[0] else thresholds
    )
    gc.freeze()
    gc.set_threshold(*raised)
    try:
        yield
    finally:
        if gc.get_threshold() == raised:
            gc.set_threshold(*thresholds)
        gc.unfreeze()


class ProducerLoop:
    """Sends at ``rate`` msg/s over ``producers`` (round robin) until :meth:`stop`.

    ``id_bases`` holds each producer's first message id
    (:func:`loadgen.engine.accounting.message_id_base` of its run-wide producer number).
    """

    def __init__(
        self,
        producers: Sequence[Producer],
        payloads: Sequence[bytes],
        keys: KeySource | None,
        rate: float,
        recorder: PythonProducerRecorder | CompiledProducerRecorder,
        id_bases: Sequence[int],
        max_in_flight: int | None = None,
    ) -> None:
        if not producers or not payloads:
            raise ValueError("the producer loop needs at least one producer and one payload")
        if len(id_bases) != len(producers):
            raise ValueError("the producer loop needs one message id base per producer")
        self._producers = list(producers)
        self._id_bases = list(id_bases)
        self._payloads = list(payloads)
        self._keys = keys
        self._rate = rate
        self._recorder = recorder
        self._window = (
            None if max_in_flight is None else Window(self._producers, id_bases, max_in_flight)
        )
        self._burst = 1 if any(isinstance(p, BlockingSends) for p in self._producers) else BURST
        self._stopping = False
        self._rate_change: tuple[float, bool] | None = None
        self._rate_lock = threading.Lock()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._guarded_run, name="producer-loop", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop sending; returns when the loop thread has ended (or ``timeout_s`` passed)."""
        self._stopping = True
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    def adjust_rate(self, rate: float, *, keep_lag: bool) -> None:
        """Send at ``rate`` from the next burst boundary on (see :meth:`Schedule.continued`)."""
        with self._rate_lock:
            self._rate_change = (rate, keep_lag)

    def _guarded_run(self) -> None:
        try:
            with collector_set_for_load():
                self._run()
        except BaseException as error:  # reported by the worker; a dead loop must not go unseen
            self.error = error

    def _run(self) -> None:
        polls = [p.poll for p in self._producers]
        window = self._window
        bind = self._recorder.bind if window is None else window.binding(self._recorder.bind)
        to_wall = time_ns() - perf_counter_ns()
        send = burst_sender(
            self._producers, self._payloads, self._keys, bind, self._id_bases, to_wall
        )
        schedule = Schedule(perf_counter_ns(), self._rate)
        start, interval = schedule.start_ns, schedule.interval_ns
        n_polls = len(polls)
        sent = waits = 0
        last_poll = 0
        while not self._stopping:
            if self._rate_change is not None:  # rare: the lock is taken only then
                with self._rate_lock:
                    (rate, keep_lag), self._rate_change = self._rate_change, None
                schedule = schedule.continued(sent, perf_counter_ns(), rate, keep_lag=keep_lag)
                start, interval = schedule.start_ns, schedule.interval_ns
            now = perf_counter_ns()
            due = schedule.due(now)
            if due <= sent:
                if n_polls > 1 and now - last_poll >= POLL_EVERY_NS:
                    for poll in polls:
                        poll()
                    last_poll = now
                wait_ns = schedule.intended_ns(sent) - perf_counter_ns()
                if wait_ns > 0:
                    polls[waits % n_polls](min(wait_ns / 1e9, MAX_WAIT_S))
                    waits += 1
                continue
            end = min(due, sent + self._burst)
            if window is not None:
                end = min(end, sent + window.room(sent))
                if end == sent:
                    window.wait(sent, MAX_WAIT_S)
                    continue
            send(sent, end, start, interval)
            sent = end
            for poll in polls:
                poll()
            last_poll = perf_counter_ns()


class Window:
    """Per producer, how many messages are in flight, and the wait for one to be acknowledged.

    ``sent`` per producer follows from the loop's round robin; ``done`` is counted by the
    acknowledgement, under a lock because some clients call it from their own thread (and a
    send that fails at once calls it from the loop's).
    """

    def __init__(self, producers: Sequence[Producer], id_bases: Sequence[int], size: int) -> None:
        if size < 1:
            raise ValueError("at least one message must be allowed in flight")
        self.size = size
        self._producers = list(producers)
        self._index = {base >> SEQ_BITS: i for i, base in enumerate(id_bases)}
        self._done = [0] * len(producers)
        self._lock = threading.Lock()
        self._acked = threading.Event()

    def binding(self, bind: Callable[[int, int, int], Ack]) -> Callable[[int, int, int], Ack]:
        """``bind`` whose acknowledgements also free a slot of the message's producer."""
        index, done, lock, acked = self._index, self._done, self._lock, self._acked

        def counted(ack: Ack, message_id: int, *result: object) -> None:
            ack(*result)
            with lock:
                done[index[message_id >> SEQ_BITS]] += 1
            acked.set()

        def bound(message_id: int, intended: int, sent: int) -> Ack:
            return partial(counted, bind(message_id, intended, sent), message_id)

        return bound

    def in_flight(self, producer: int, sent: int) -> int:
        """Messages of ``producer`` sent (of the first ``sent`` of the loop) and not yet done."""
        n = len(self._producers)
        mine = sent // n + (producer < sent % n)
        return mine - self._done[producer]

    def room(self, sent: int) -> int:
        """How many of the next messages (round robin from ``sent``) fit in their windows."""
        n = len(self._producers)
        free = [self.size - self.in_flight(p, sent) for p in range(n)]
        fits = 0
        while free[(sent + fits) % n] > 0:
            free[(sent + fits) % n] -= 1
            fits += 1
        return fits

    def wait(self, sent: int, timeout_s: float) -> None:
        """Wait (at most ``timeout_s``) for an ack of the producer whose turn it is."""
        producer = self._producers[sent % len(self._producers)]
        if isinstance(producer, CallbackAcks):
            self._acked.clear()
            if self.in_flight(sent % len(self._producers), sent) >= self.size:
                self._acked.wait(timeout_s)
        else:
            producer.poll(timeout_s)
