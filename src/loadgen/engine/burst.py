"""The producer loop's per-message work, one burst at a time: in C where built, else in Python.

A burst sends the messages ``[first, end)`` of the loop's round robin over its producers; per
message it computes the intended time on the absolute schedule, reads the clock, picks the key,
derives the message id, binds the acknowledgement (which records the publish delay) and sends.

When every producer opts in with a :class:`~loadgen.driver_api.PrefixedSend` and every payload has
room for the stamp, ``loadgen.engine._burst`` runs the burst in C: it stamps each payload's prefix
itself and makes the client call the driver described, with no Python bytecode per message. It
is built where the recorders' ``loadgen.engine._hotpath`` is, and ``LOADGEN_PURE_PYTHON=1``
switches it off with them. Otherwise :class:`SendBurst`, the same steps in Python, hands each
message to its producer's ``send``, which stamps it: in Python, a driver's own ``send`` is the
cheaper way to its client, well ahead of a Python twin of the C burst
(bench/results/memory-and-engine.md "Issue #43").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from time import perf_counter_ns
from typing import NamedTuple

from loadgen.driver_api import (
    ACK,
    KEY,
    VALUE,
    OnDone,
    PrefixedProducer,
    PrefixedSend,
    Producer,
    Slot,
)
from loadgen.driver_api.stamp import PREFIX_BYTES
from loadgen.engine.keys import KeySource
from loadgen.engine.recorder import PURE_PYTHON, Ack

try:
    from loadgen.engine import _burst
except ImportError:  # built without a C compiler: every burst is a SendBurst
    _burst = None

COMPILED = _burst is not None and not PURE_PYTHON

Bind = Callable[[int, int, int], Ack]
Failed = tuple[int, BaseException, bytes | None, bytes, OnDone]
"""``(index, error, key, value, ack)`` of the message whose call raised: neither acknowledged nor
sent again by the burst."""
Run = Callable[[int, int, int, float], Failed | None]
"""``loadgen.engine._burst.Burst.run(first, end, start_ns, interval_ns)``: ``None`` when every call
returned."""
SendRange = Callable[[int, int, int, float], None]
"""``send(first, end, start_ns, interval_ns)``: hand messages ``[first, end)`` to the producers."""


class Target(NamedTuple):
    """A :class:`~loadgen.driver_api.PrefixedSend` as ``loadgen.engine._burst`` takes it: where its
    slots
    are."""

    call: Callable[..., object]
    args: tuple[object, ...]
    """The template, with ``None`` in the slots."""
    value_at: int
    key_at: int
    ack_at: int
    """-1: the message is acknowledged when ``call`` returns."""

    @classmethod
    def of(cls, send: PrefixedSend) -> Target:
        found = {slot: [i for i, arg in enumerate(send.args) if arg is slot] for slot in Slot}
        if len(found[VALUE]) != 1 or len(found[KEY]) != 1 or len(found[ACK]) > 1:
            raise ValueError(
                f"a prefixed send takes VALUE and KEY once, ACK at most once: {send.args!r}"
            )
        args = tuple(None if isinstance(arg, Slot) else arg for arg in send.args)
        return cls(send.call, args, found[VALUE][0], found[KEY][0], (found[ACK] or [-1])[0])


class SendBurst:
    """The burst in Python: each message through its producer's ``send``, which stamps it and
    deals with its client's refusals itself."""

    def __init__(
        self,
        producers: Sequence[Producer],
        payloads: Sequence[bytes],
        keys: KeySource | None,
        bind: Bind,
        id_bases: Sequence[int],
        to_wall: int,
    ) -> None:
        self._sends = [producer.send for producer in producers]
        self._payloads = list(payloads)
        self._keys = keys
        self._bind = bind
        self._bases = list(id_bases)
        self._to_wall = to_wall

    def run(self, first: int, end: int, start_ns: int, interval_ns: float) -> None:
        sends, payloads, keys, bind = self._sends, self._payloads, self._keys, self._bind
        bases, to_wall = self._bases, self._to_wall
        n_sends, n_payloads = len(sends), len(payloads)
        for index in range(first, end):
            intended = start_ns + int(index * interval_ns)
            now = perf_counter_ns()
            key = keys(now) if keys is not None else None
            producer = index % n_sends
            message_id = bases[producer] + index // n_sends
            sends[producer](
                key,
                payloads[index % n_payloads],
                bind(message_id, intended, now),
                message_id,
                intended + to_wall,
            )


def prefixed_sends(
    producers: Sequence[Producer], payloads: Sequence[bytes]
) -> list[PrefixedSend] | None:
    """Each producer's direct call, or ``None`` unless every producer offers one and every
    payload is bytes with room for the stamp (a shorter one needs the driver's other carrier)."""
    if any(type(payload) is not bytes or len(payload) < PREFIX_BYTES for payload in payloads):
        return None
    sends = []
    for producer in producers:
        send = producer.prefixed_send() if isinstance(producer, PrefixedProducer) else None
        if send is None:
            return None
        sends.append(send)
    return sends


def burst_sender(
    producers: Sequence[Producer],
    payloads: Sequence[bytes],
    keys: KeySource | None,
    bind: Bind,
    id_bases: Sequence[int],
    to_wall: int,
) -> SendRange:
    """How the producer loop sends a range of messages to ``producers``."""
    sends = prefixed_sends(producers, payloads) if COMPILED else None
    if sends is None:
        return SendBurst(producers, payloads, keys, bind, id_bases, to_wall).run
    targets = [Target.of(send) for send in sends]
    burst = _burst.Burst(targets, payloads, keys, bind, id_bases, to_wall)
    return partial(send_range, burst.run, [send.resend for send in sends])


def send_range(
    run: Run,
    resends: Sequence[Callable[[BaseException, bytes | None, bytes, OnDone], None]],
    first: int,
    end: int,
    start_ns: int,
    interval_ns: float,
) -> None:
    """``run`` a burst over ``[first, end)``; a message whose call raised goes to its producer's
    ``resend`` once, and the burst goes on after it."""
    while (failed := run(first, end, start_ns, interval_ns)) is not None:
        index, error, key, value, ack = failed
        resends[index % len(resends)](error, key, value, ack)
        first = index + 1
