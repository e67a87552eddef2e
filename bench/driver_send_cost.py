"""A driver's own send path, before and after a change: CPU per message of ``Producer.send``.

Usage: python bench/driver_send_cost.py --driver kafka|pulsar|rabbitmq --before DIR
       [--seconds 5] [--rounds 5] [--size 1024] [--cpu N]

Measures the driver alone, without the engine: a loop sending 1 KiB messages unthrottled
through ``create_producer(topic).send`` (no key, ``poll()`` after every 512 sends, a callback
that counts acknowledgements), then ``flush``. Side "after" runs this checkout's drivers (or
those of ``--after DIR``); side
"before" runs the drivers of the source tree ``DIR`` (e.g. ``git worktree add DIR <commit>``),
called with the 3-argument ``send`` if they predate message ids. The sides alternate in fresh
subprocesses against one local broker started here, a fresh 16-partition topic per run; CPU is
the child process's own user + system time (all threads, the client's included). RabbitMQ
gets a paused subscription, whose queues the messages fill (deleted after each run). ``--cpu N``
pins each child to CPU ``N`` before it creates its client (as ``bench/ab.py`` does).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from loadgen.base.cpus import pin, usable_cpus
from loadgen.driver_api import TopicSpec, open_driver
from loadgen.driver_api.driver_spec import DriverSpec

POLL_EVERY = 512
PARTITIONS = 16


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def send_loop(
    side: str, kind: str, config: dict, seconds: float, size: int, cpu: int | None
) -> dict:
    if cpu is not None:
        pin(usable_cpus(str(cpu)))
    driver = open_driver(DriverSpec(kind, kind, config, "bench"))
    topic = f"{driver.topic_name_prefix}-{uuid.uuid4().hex[:8]}"
    driver.create_topics([TopicSpec(topic, PARTITIONS)])
    if kind == "rabbitmq":  # its queues, bound: the broker would return every message otherwise
        driver.create_consumer(topic, "bench", lambda *_: None).pause()
    producer = driver.create_producer(topic)
    payload = bytes(size)
    acked = [0]

    def on_done(error: object, *_: object) -> None:
        acked[0] += error is None

    send, poll = producer.send, producer.poll
    carries_ids = len(inspect.signature(send).parameters) == 5  # the API since message ids
    intended = time.time_ns()
    sent = 0
    cpu0, start = cpu_seconds(), time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        if carries_ids:
            for index in range(sent, sent + POLL_EVERY):
                send(None, payload, on_done, index, intended + index)
        else:
            for _ in range(POLL_EVERY):
                send(None, payload, on_done)
        sent += POLL_EVERY
        poll()
    producer.flush(30)
    row = {"acked": acked[0], "seconds": time.perf_counter() - start, "cpu": cpu_seconds() - cpu0}
    producer.close()
    driver.delete_topics([topic])
    driver.close()
    return row


def run_side(side: str, source: Path, args: dict) -> dict:
    env = {**os.environ, "PYTHONPATH": str(source / "src")}
    done = subprocess.run(
        [sys.executable, __file__, "--child", side, json.dumps(args)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    row = json.loads(done.stdout.strip().splitlines()[-1])
    row["rate"] = row["acked"] / row["seconds"]
    row["cpu_us"] = row["cpu"] / max(row["acked"], 1) * 1e6
    return row


def start_broker(kind: str):
    if kind == "kafka":
        from loadgen_drivers.kafka.local.tansu import start_tansu

        return start_tansu()
    if kind == "pulsar":
        from loadgen_drivers.pulsar.local.lite import start_pulsar_lite

        return start_pulsar_lite(default_partitions=PARTITIONS)
    from loadgen_drivers.rabbitmq.local.server import start_rabbitmq

    return start_rabbitmq()


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        print(json.dumps(send_loop(sys.argv[2], **json.loads(sys.argv[3]))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--driver", choices=["kafka", "pulsar", "rabbitmq"], required=True)
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--cpu", type=int)
    options = parser.parse_args()
    sources = {"before": options.before.resolve(), "after": options.after.resolve()}
    broker = start_broker(options.driver)
    try:
        args = {
            "kind": options.driver,
            "config": broker.driver_config,
            "seconds": options.seconds,
            "size": options.size,
            "cpu": options.cpu,
        }
        rows: dict[str, list[dict]] = {"before": [], "after": []}
        print("round | before msg/s | after msg/s | before CPU µs/msg | after CPU µs/msg")
        for number in range(1, options.rounds + 1):
            for side in ("before", "after") if number % 2 else ("after", "before"):
                rows[side].append(run_side(side, sources[side], args))
            b, a = rows["before"][-1], rows["after"][-1]
            print(
                f"{number} | {b['rate']:,.0f} | {a['rate']:,.0f} | "
                f"{b['cpu_us']:.2f} | {a['cpu_us']:.2f}"
            )
        medians = {
            side: {key: statistics.median(r[key] for r in rows[side]) for key in ("rate", "cpu_us")}
            for side in rows
        }
        ratios = [
            a["cpu_us"] / b["cpu_us"] for a, b in zip(rows["after"], rows["before"], strict=True)
        ]
        print(
            f"median | {medians['before']['rate']:,.0f} | {medians['after']['rate']:,.0f} | "
            f"{medians['before']['cpu_us']:.2f} | {medians['after']['cpu_us']:.2f}"
        )
        print("CPU per message after/before per round:", " ".join(f"{r:.3f}" for r in ratios))
        print(f"median {statistics.median(ratios):.3f}")
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
