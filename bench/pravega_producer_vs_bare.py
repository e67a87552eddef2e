"""loadgen's Pravega producer path beside a bare pravega_client write_event_async loop, same run.

Usage: python bench/pravega_producer_vs_bare.py [--seconds 5] [--rounds 5] [--size 1024]
       [--window 1000] [--cpu N] [--sides bare,loadgen,run] [--no-held] [--upstream]

Starts loadgen's local Pravega (:mod:`loadgen_drivers.pravega.local`: controller and segment store
in one Python process, in memory, at most 1 GiB of event data), or with ``--upstream`` Pravega's
own standalone (``brokers up pravega --upstream``'s: one JVM, event data in files), and makes
scope ``bench``, then
rotates A (bare loop), B (loadgen: ProducerLoop + recorder + Pravega driver + per-second
binning) and C (the whole ``loadgen run`` process tree) in fresh subprocesses (:mod:`ab`), each
on a fresh stream of 16 fixed segments that the parent creates (``create_stream(scope, stream,
16)``) before the side and seals and deletes after it, so no side writes into a store another
one filled. Same settings on every side: one ``StreamWriter``, events of ``--size`` zero bytes as
text (loadgen adds its 24-byte stamp), a routing key per event picked by the clock from 10,000
random keys (loadgen's RANDOM_NANO pool; the bare loop takes ``perf_counter_ns() % 10000``), at
most ``--window`` events in flight (loadgen: ``producerMaxInFlight``; the bare loop: an
``asyncio.Semaphore``), unthrottled for ``--seconds``, measured up to the last acknowledgement.

Both sides get the same explicit window (loadgen's producer also waits on its own beyond 1,000
unacknowledged events, ``loadgen_drivers.pravega.producer.MAX_UNACKNOWLEDGED``). loadgen also holds
a keyed
write until its key's previous write is acknowledged (:mod:`loadgen_drivers.pravega.producer`); the
bare
loop does not (the client may reorder a key's events). After the rounds, one more loadgen run, not
in the table, counts how many writes were held (``--no-held`` skips it): it wraps the producer's
``write``, which costs CPU per event.

Also reported: the local Pravega's CPU during each side (psutil on its pid; the broker is never
pinned) and a reference loop in a fresh child, a clock read, a payload pick and a no-op call per
iteration, in ns, so the per-message figures can be set against the machine's Python speed.
``--cpu N`` pins every side's processes to CPU ``N`` (:mod:`ab`).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from time import perf_counter_ns
from typing import Any

import pravega_client
import psutil

import ab
from loadgen.driver_api import TopicSpec
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.keys import key_pool
from loadgen.engine.local_worker import LocalWorker
from loadgen.running.stop import exit_at_once
from loadgen_drivers.pravega import Driver
from loadgen_drivers.pravega.events import routing_key

SCOPE = "bench"
SEGMENTS = 16
WINDOW = 1000
BURST = 512
"""Writes between two reads of the clock that ends the bare loop (the producer loop's burst)."""
DRAIN_S = 30.0
KEYS = "RANDOM_NANO"


# -- side A: the bare loop ---------------------------------------------------------------------
def bare(uri: str, topic: str, seconds: float, size: int, window: int) -> dict:
    """The loop a pravega_client user writes for throughput, on a client of its own."""
    manager = pravega_client.StreamManager(uri)
    writer = manager.create_writer(SCOPE, topic)
    keys = [key.decode() for key in key_pool()]
    return asyncio.run(bare_writes(writer, keys, "\0" * size, seconds, window))


async def bare_writes(
    writer: Any, keys: list[str], event: str, seconds: float, window: int
) -> dict:
    """write_event_async with a done callback, at most ``window`` in flight, for ``seconds``;
    then wait for every write in flight and flush, measured up to there."""
    write, pool = writer.write_event_async, len(keys)
    slots = asyncio.Semaphore(window)
    acked, failed = [0], [0]

    def done(future: asyncio.Future) -> None:
        slots.release()
        if future.cancelled() or future.exception() is not None:
            failed[0] += 1
        else:
            acked[0] += 1

    cpu0, start = ab.cpu_seconds(), time.perf_counter()
    end = start + seconds
    while time.perf_counter() < end:
        for _ in range(BURST):
            await slots.acquire()
            write(event, keys[perf_counter_ns() % pool]).add_done_callback(done)
    await asyncio.wait_for(take_all(slots, window), DRAIN_S)
    writer.flush()
    return {**ab.measured(acked[0], start, cpu0), "failed": failed[0]}


async def take_all(slots: asyncio.Semaphore, window: int) -> None:
    """Returns once every slot is free again: nothing in flight."""
    for _ in range(window):
        await slots.acquire()


# -- sides B and C: loadgen --------------------------------------------------------------------
def target(uri: str, topic: str) -> tuple[DriverSpec, TopicSpec]:
    """loadgen's Pravega driver on scope ``bench`` and the parent's stream."""
    config = {"client": {"controllerURI": uri, "scopeName": SCOPE}, "createScope": True}
    return DriverSpec("Pravega", "pravega", config, "bench"), TopicSpec(topic, SEGMENTS)


def engine(uri: str, topic: str, seconds: float, size: int, window: int) -> dict:
    """loadgen's own path: the worker's producer loop, unthrottled, binned each second."""
    worker = pravega_worker(uri, topic)
    result = load_for(worker, seconds, size, window)
    worker.close(delete_topics=False)
    return result


def pravega_worker(uri: str, topic: str) -> LocalWorker:
    """A worker on ``Driver.from_config`` with one producer on the parent's stream."""
    spec, stream = target(uri, topic)
    worker = LocalWorker(Driver.from_config(spec))
    worker.driver.create_topics([stream])  # idempotent: the parent already made it
    worker.create_producers([stream.name])
    return worker


def load_for(worker: LocalWorker, seconds: float, size: int, window: int) -> dict:
    """:func:`ab.load_for` with RANDOM_NANO keys and ``window`` events in flight."""
    cpu0, start = ab.cpu_seconds(), time.perf_counter()
    worker.start_load(ab.UNREACHABLE_RATE, [bytes(size)], KEYS, window)
    acked = 0
    while (elapsed := time.perf_counter() - start) < seconds:
        time.sleep(min(1.0, seconds - elapsed))
        acked += worker.snapshot(0, 0, warmup=False).sent
    unacked = worker.stop_load(DRAIN_S)
    acked += worker.snapshot(0, 0, warmup=False).sent
    if worker.loop_error() is not None:
        raise RuntimeError(f"the producer loop failed: {worker.loop_error()!r}")
    return {**ab.measured(acked, start, cpu0), "unacked": unacked}


def whole(uri: str, topic: str, seconds: float, size: int, window: int) -> dict:
    """:func:`ab.whole_run` on this stream, its workload keyed and windowed as the loop's. It
    builds the workload with ``ab.producer_only``, replaced here (in this side's own process)."""
    plain = ab.producer_only

    def keyed(stream: TopicSpec, run_seconds: float, run_size: int) -> dict:
        workload = plain(stream, run_seconds, run_size)
        return {**workload, "keyDistributor": KEYS, "producerMaxInFlight": window}

    ab.producer_only = keyed
    return ab.whole_run(*target(uri, topic), seconds, size)


def held(uri: str, topic: str, seconds: float, size: int, window: int) -> dict:
    """:func:`engine` with the producer's ``write`` wrapped to count the writes held behind
    their key's write in flight (a private attribute of the driver's producer, read per write)."""
    worker = pravega_worker(uri, topic)
    counts = count_held(worker._producers[0])
    result = load_for(worker, seconds, size, window)
    worker.close(delete_topics=False)
    return {**result, "writes": counts[0], "held": counts[1]}


def count_held(producer: Any) -> list[int]:
    """``[writes, writes held]``, counted from now on on the driver's write-loop thread."""
    write, in_flight, counts = producer.write, producer._held, [0, 0]

    def counted(sent_ns: int, message_id: int, intended_ns: int, key: bytes | None, *rest: Any):
        counts[0] += 1
        counts[1] += key is not None and routing_key(key) in in_flight
        write(sent_ns, message_id, intended_ns, key, *rest)

    producer.write = counted
    return counts


# -- the parent ---------------------------------------------------------------------------------
@dataclass
class BrokerMeter:
    """The broker's CPU seconds and the wall seconds from each stream's creation to its removal
    (a side's whole child: start-up, load, teardown), in the order the sides ran."""

    pid: int
    usage: list[tuple[float, float]] = field(default_factory=list)

    def cpu(self) -> float:
        times = psutil.Process(self.pid).cpu_times()
        return times.user + times.system

    def fresh_topic(self, manager: Any) -> Callable[[str], Callable[[], None]]:
        def fresh(topic: str) -> Callable[[], None]:
            manager.create_stream(SCOPE, topic, SEGMENTS)
            cpu0, start = self.cpu(), time.perf_counter()

            def remove() -> None:
                self.usage.append((self.cpu() - cpu0, time.perf_counter() - start))
                manager.seal_stream(SCOPE, topic)
                manager.delete_stream(SCOPE, topic)

            return remove

        return fresh


def attach_broker(
    rows: dict[str, list[dict]], args: argparse.Namespace, meter: BrokerMeter
) -> None:
    """Each row gets the broker's CPU during its side's child: per acked message, and in cores
    over the side's measured seconds (the child's set-up and teardown, writer and stream calls,
    are in the CPU, not in the seconds: an upper bound for the load phase)."""
    order = [side for r in range(args.rounds) for side in ab.rotated(args.sides, r)]
    taken = {side: 0 for side in rows}
    for side, (cpu, wall) in zip(order, meter.usage, strict=True):
        row = rows[side][taken[side]]
        taken[side] += 1
        row["broker_cpu"], row["broker_wall"] = cpu, wall
        row["broker_cores"] = cpu / row["seconds"]
        row["broker_us_per_msg"] = cpu / max(row["acked"], 1) * 1e6


def median(rows: list[dict], key: str) -> float:
    return statistics.median(row[key] for row in rows)


def per_round(base: list[dict], side: list[dict], key: str) -> list[float]:
    return [other[key] / first[key] for first, other in zip(base, side, strict=True)]


def print_broker(rows: dict[str, list[dict]]) -> None:
    for side, side_rows in rows.items():
        cores = " ".join(f"{row['broker_cores']:.2f}" for row in side_rows)
        print(
            f"broker during {side:8} {median(side_rows, 'broker_us_per_msg'):.2f} µs CPU per "
            f"acked message, {median(side_rows, 'broker_cores'):.2f} cores (medians; "
            f"cores per round {cores})"
        )


def markdown(rows: dict[str, list[dict]], window: int, reference_ns: list[float]) -> None:
    """A header and one row for bench/results/pravega.md: medians per side, per-round ratios to
    the first."""
    base, *others = rows
    header = ["window"]
    cells = [f"{window:,}"]
    for side, side_rows in rows.items():
        header += [f"{side} msg/s", f"{side} µs/msg", f"broker µs/msg, cores ({side})"]
        cpu = f"{median(side_rows, 'cpu_us_per_msg'):.2f}"
        if "cpu_total_us_per_msg" in side_rows[0]:
            cpu += f" ({median(side_rows, 'cpu_total_us_per_msg'):.2f})"
        cells += [
            f"{median(side_rows, 'rate'):,.0f}",
            cpu,
            f"{median(side_rows, 'broker_us_per_msg'):.2f}, "
            f"{median(side_rows, 'broker_cores'):.2f}",
        ]
    for side in others:
        for key, what in (("rate", "msg/s"), ("cpu_us_per_msg", "CPU")):
            ratios = per_round(rows[base], rows[side], key)
            header.append(f"{side}/{base} {what} per round")
            spread = " ".join(f"{r:.2f}" for r in ratios)
            cells.append(f"**{statistics.median(ratios):.2f}** ({spread})")
    header.append("reference loop ns")
    cells.append(" / ".join(f"{ns:.0f}" for ns in reference_ns))
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    print("| " + " | ".join(cells) + " |")


def main() -> None:
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--window", type=int, default=WINDOW, help="events in flight, >= 1")
    extra.add_argument("--no-held", action="store_true", help="skip the held-writes count")
    extra.add_argument("--upstream", action="store_true", help="on Pravega's own standalone")
    known, rest = extra.parse_known_args()
    sys.argv = [sys.argv[0], *rest]  # the rest are ab's arguments
    args = ab.parse_args(seconds=5, rounds=5)
    if known.window < 1:
        sys.exit("--window must be at least 1")

    from loadgen_drivers.pravega.local.launch import start_local_pravega
    from loadgen_drivers.pravega.local.upstream import start_upstream_pravega

    broker = start_upstream_pravega() if known.upstream else start_local_pravega()
    try:
        manager = pravega_client.StreamManager(broker.address)
        manager.create_scope(SCOPE)
        meter = BrokerMeter(broker.pid)
        where = {"uri": broker.address, "window": known.window}
        reference_ns = [ab.reference_loop(__file__, args)]
        rows = ab.alternate(__file__, args, meter.fresh_topic(manager), **where)
        reference_ns.append(ab.reference_loop(__file__, args))
        attach_broker(rows, args, meter)
        ab.print_summary(rows)
        print_broker(rows)
        print(f"reference loop: {' then '.join(f'{ns:.0f}' for ns in reference_ns)} ns/iteration")
        if not known.no_held:
            held_run(args, meter.fresh_topic(manager), where)
        markdown(rows, known.window, reference_ns)
    finally:
        broker.stop()


def held_run(
    args: argparse.Namespace, fresh: Callable[[str], Callable[[], None]], where: dict
) -> None:
    topic = f"bench-held-{time.time_ns()}"
    remove = fresh(topic)
    row = ab.run_side(
        __file__, "held", topic=topic, seconds=args.seconds, size=args.size, cpu=args.cpu, **where
    )
    remove()
    share = row["held"] / max(row["writes"], 1)
    print(
        f"held behind their key's write in flight: {row['held']:,} of {row['writes']:,} writes "
        f"({share:.1%}); that run (instrumented, not in the table) {row['rate']:,.0f} msg/s, "
        f"{row['cpu_us_per_msg']:.2f} µs CPU/msg"
    )


if __name__ == "__main__":
    sides = {"bare": bare, "loadgen": engine, "run": whole, "held": held, "reference": ab.reference}
    if ab.child_main(sides):
        # as `loadgen run` ends: pravega_client 0.3.8's threads can still take the GIL while the
        # interpreter finalizes (a bare child aborted so, "PyGILState_Release", once in 11)
        exit_at_once(0)
    main()
