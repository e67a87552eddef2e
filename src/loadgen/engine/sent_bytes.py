"""Bytes of acknowledged messages, exact when payload sizes vary.

The producer loop sends loop message ``index`` as ``payloads[index % len(payloads)]`` from
producer ``index % n`` with sequence ``index // n``. So an acknowledged message id (producer
number, sequence) gives back its index and its size: the bytes are counted at snapshot time
from the ids the recorder keeps anyway (all of one size, from their count), with nothing added
to the per-message path.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from loadgen.engine.accounting import SEQ_BITS, SEQ_MASK
from loadgen.engine.recorder import ProducerSample


class SentBytes:
    """Sizes of the payload pool and the producers' numbers, as the producer loop uses them."""

    def __init__(self, payloads: Sequence[bytes], id_bases: Sequence[int]) -> None:
        sizes = np.fromiter((len(p) for p in payloads), dtype=np.int64, count=len(payloads))
        self._uniform = int(sizes[0]) if bool((sizes == sizes[0]).all()) else None
        self._sizes = sizes
        numbers = np.asarray(id_bases, dtype=np.int64) >> SEQ_BITS
        self._order = np.argsort(numbers)
        self._numbers = numbers[self._order]
        self._producers = len(id_bases)

    def of(self, produced: ProducerSample) -> int:
        """Bytes of the messages ``produced`` says were acknowledged."""
        if self._uniform is not None:
            return produced.acked_count * self._uniform
        acked = produced.acked_ids()
        slots = self._order[np.searchsorted(self._numbers, acked >> SEQ_BITS)]
        index = (acked & SEQ_MASK) * self._producers + slots
        return int(self._sizes[index % len(self._sizes)].sum())
