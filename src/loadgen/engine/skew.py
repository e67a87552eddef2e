"""Clock correction of end-to-end latencies, per message, by the consumer's recorder.

A message sent on worker P and received on worker C measures its latency plus
``offset(C) - offset(P)``, the offsets being each worker's clock minus the coordinator's
(:mod:`loadgen.distributed.clock`). Every message id carries its producer's run-wide number
(:mod:`loadgen.engine.accounting`), so a consumer's worker that knows which producer numbers run on
which worker, and that worker's offset, finds each delivery's shift with one lookup by producer
number: exact for any pairing of producer and consumer workers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from loadgen.engine.accounting import SEQ_BITS

ProducerRange = tuple[int, int, int]
"""``(first producer number, how many, offset ns of the worker they run on)``."""


@dataclass(frozen=True)
class ClockTable:
    """What a consumer's worker needs to correct its deliveries."""

    own_offset_ns: int
    """This worker's clock minus the coordinator's."""
    producers: Sequence[ProducerRange]
    _by_producer: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        size = max((first + count for first, count, _ in self.producers), default=0)
        by_producer = np.zeros(size, np.int64)
        for first, count, offset_ns in self.producers:
            by_producer[first : first + count] = self.own_offset_ns - offset_ns
        object.__setattr__(self, "_by_producer", by_producer)

    def shift_by_producer(self) -> np.ndarray:
        """Per producer number, the nanoseconds to subtract from its messages' latencies:
        ``offset(this worker) - offset(its producer's worker)``; 0 for one the table does not
        know."""
        return self._by_producer.copy()

    def shifts(self, message_ids: np.ndarray) -> np.ndarray:
        """:meth:`shift_by_producer` of each delivery's producer; 0 for an id whose producer
        the table does not know (no id, another run's message)."""
        numbers = message_ids >> SEQ_BITS
        known = (message_ids >= 0) & (numbers < len(self._by_producer))
        shifts = np.zeros(len(message_ids), np.int64)
        shifts[known] = self._by_producer[numbers[known]]
        return shifts
