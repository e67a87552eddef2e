"""A consumer that takes its time: the callback sleeps after recording each message.

Latency is recorded on receipt, before the sleep (as PerfTest's ``--consumer-latency``): a slow
consumer shows up as a capped consume rate, a growing backlog and rising end-to-end latency of
the messages that wait behind it, not as a constant added to every message. The sleep runs on
the client's delivery thread (Kafka's poll, Pulsar's listener, pika's connection thread, the
memory driver's reader), which is what holds the next message back.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import cycle
from time import sleep

from loadgen.driver_api import OnMessage


def delayed(on_message: OnMessage, delays: Sequence[float]) -> OnMessage:
    """``on_message``, then a sleep of the next delay of ``delays`` (seconds, cycled)."""
    if len(delays) == 1:
        (pause,) = delays

        def fixed(payload: bytes, sent_ns: int, message_id: int, intended: int, part: int) -> None:
            on_message(payload, sent_ns, message_id, intended, part)
            sleep(pause)

        return fixed
    following = cycle(delays).__next__

    def drawn(payload: bytes, sent_ns: int, message_id: int, intended: int, part: int) -> None:
        on_message(payload, sent_ns, message_id, intended, part)
        sleep(following())

    return drawn
