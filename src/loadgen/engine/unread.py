"""What each subscription had yet to read when the run ended, as its broker counts it.

A drain that ends with messages undelivered does not make them lost: a catch-up subscription
whose backlog was too big to read in the run's time still has it in the broker. Before the
accounting calls anything lost, each consumer that can (:class:`loadgen.driver_api.Backlog`)
asks its broker what is left; :func:`loadgen.engine.accounting.account` counts that much of
what is missing as unread. The question is bounded: a broker that does not answer leaves it
unknown, and the missing messages count as lost.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from loadgen.driver_api import Backlog

log = logging.getLogger("loadgen.run")

UNREAD_QUERY_S = 2.0
"""How long asking every consumer's broker may take in all."""


def unread_by_subscription(
    consumers: Sequence[object], names: Sequence[tuple[str, str]], timeout_s: float
) -> dict[tuple[str, str], dict[str, int] | None]:
    """Per ``(topic, subscription)`` of ``consumers`` (named by ``names``, in order), the
    broker's unread counts by partition or queue; ``None`` where one consumer could not say.

    The questions are asked on a thread of their own and waited for ``timeout_s`` at most: a
    client call that outlives its own timeout must not hold the run's result."""
    answers: dict[int, dict[str, int] | None] = {}
    asking = threading.Thread(
        target=_ask_each,
        args=(consumers, names, time.monotonic() + timeout_s, answers),
        name="loadgen-unread",
        daemon=True,
    )
    asking.start()
    asking.join(timeout_s)
    answered = dict(answers)  # what came in time; a late answer is not used
    found: dict[tuple[str, str], dict[str, int] | None] = {}
    for index, name in enumerate(names):
        counts, known = answered.get(index), found.get(name, {})
        found[name] = None if counts is None or known is None else known | counts
    return found


def _ask_each(
    consumers: Sequence[object],
    names: Sequence[tuple[str, str]],
    deadline: float,
    answers: dict[int, dict[str, int] | None],
) -> None:
    for index, (consumer, name) in enumerate(zip(consumers, names, strict=True)):
        left = deadline - time.monotonic()
        if not isinstance(consumer, Backlog) or left <= 0:
            continue
        try:
            answers[index] = consumer.unread(left)
        except Exception as error:  # the accounting goes on without it
            log.warning("asking the broker for %s's backlog failed: %s", name[1], error)
