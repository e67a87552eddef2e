"""loadgen's Kafka producer path beside a bare confluent-kafka loop: same settings, same run.

Usage: python bench/kafka_producer_vs_bare.py [--seconds 10] [--rounds 3] [--size 1024]

Starts a local tansu, then alternates A (bare loop) and B (loadgen: ProducerLoop + recorder +
Kafka driver + per-second histogram binning) in fresh subprocesses, each sending unthrottled to a
fresh 16-partition topic for ``--seconds``. Each side reports messages acknowledged and the CPU
time of its own process (utime + stime from /proc via getrusage, all threads, librdkafka's
included). Prints per-round numbers, medians and B/A ratios. Both sides are broker-bound on a
2-core box, so CPU per message is the efficiency figure; throughput ratios are reported beside it.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
import uuid

PRODUCER_SETTINGS = {"acks": "all", "linger.ms": "1", "batch.size": "131072"}
PARTITIONS = 16


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def bare(bootstrap: str, topic: str, seconds: float, size: int) -> dict:
    """A tight loop a user would write: the same 8-byte send-time header loadgen carries (tansu
    is measurably faster with it than without), a shared delivery callback, poll(0) after every
    512 sends, and on a full queue poll(1 ms) and retry the same message."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_SETTINGS})
    produce, payload = producer.produce, bytes(size)
    acked = [0]

    def delivered(error, message):
        if error is None:
            acked[0] += 1

    cpu0, start = _cpu_seconds(), time.perf_counter()
    end = start + seconds
    while time.perf_counter() < end:
        for _ in range(512):
            headers = [("lg-send-ns", time.time_ns().to_bytes(8, "big"))]
            while True:
                try:
                    produce(topic, payload, None, on_delivery=delivered, headers=headers)
                    break
                except BufferError:
                    producer.poll(0.001)
        producer.poll(0)
    producer.flush(30)
    return {"acked": acked[0], "seconds": time.perf_counter() - start, "cpu": _cpu_seconds() - cpu0}


def engine(bootstrap: str, topic: str, seconds: float, size: int) -> dict:
    """loadgen's own path: the worker's producer loop at an unreachable rate, binned each second."""
    from loadgen.driver import open_driver
    from loadgen.spec.driver_spec import DriverSpec
    from loadgen.worker.local import LocalWorker

    config = {
        "commonConfig": f"bootstrap.servers={bootstrap}",
        "producerConfig": "\n".join(f"{k}={v}" for k, v in PRODUCER_SETTINGS.items()),
        "consumerConfig": "auto.offset.reset=earliest",
    }
    worker = LocalWorker(open_driver(DriverSpec(name="Kafka", kind="kafka", config=config)))
    worker.topics = [topic]
    worker.create_producers(1)
    cpu0, start = _cpu_seconds(), time.perf_counter()
    worker.start_load(10_000_000, [bytes(size)], "NO_KEY")
    acked = 0
    while (elapsed := time.perf_counter() - start) < seconds:
        time.sleep(min(1.0, seconds - elapsed))
        acked += worker.snapshot(0, 0, warmup=False).sent
    worker.stop_load(30)
    acked += worker.snapshot(0, 0, warmup=False).sent
    result = {"acked": acked, "seconds": time.perf_counter() - start, "cpu": _cpu_seconds() - cpu0}
    worker.close(delete_topics=False)
    return result


def _child(side: str, bootstrap: str, topic: str, seconds: float, size: int) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", side, bootstrap, topic, str(seconds), str(size)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--child", nargs=5)
    args = parser.parse_args()
    if args.child:
        side, bootstrap, topic, seconds, size = args.child
        run = bare if side == "bare" else engine
        print(json.dumps(run(bootstrap, topic, float(seconds), int(size))))
        return

    from confluent_kafka.admin import AdminClient, NewTopic

    from loadgen.testing.tansu import start_tansu

    broker = start_tansu()
    admin = AdminClient({"bootstrap.servers": broker.address})
    rows: dict[str, list[dict]] = {"bare": [], "loadgen": []}
    try:
        for round_number in range(args.rounds):
            for side in ("bare", "loadgen"):
                topic = f"bench-{uuid.uuid4().hex[:8]}"
                for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
                    future.result(10)
                row = _child(side, broker.address, topic, args.seconds, args.size)
                row["rate"] = row["acked"] / row["seconds"]
                row["cpu_us_per_msg"] = row["cpu"] / max(row["acked"], 1) * 1e6
                rows[side].append(row)
                print(
                    f"round {round_number + 1} {side:8} {row['rate']:>10,.0f} msg/s  "
                    f"{row['cpu_us_per_msg']:6.2f} µs CPU/msg  ({row['acked']:,} acked)"
                )
                for future in admin.delete_topics([topic]).values():
                    future.result(10)
    finally:
        broker.stop()
    medians = {
        side: {
            key: statistics.median(r[key] for r in side_rows) for key in ("rate", "cpu_us_per_msg")
        }
        for side, side_rows in rows.items()
    }
    print(
        f"median bare     {medians['bare']['rate']:>10,.0f} msg/s  "
        f"{medians['bare']['cpu_us_per_msg']:.2f} µs CPU/msg"
    )
    print(
        f"median loadgen  {medians['loadgen']['rate']:>10,.0f} msg/s  "
        f"{medians['loadgen']['cpu_us_per_msg']:.2f} µs CPU/msg"
    )
    ratios = [lg["rate"] / b["rate"] for b, lg in zip(rows["bare"], rows["loadgen"], strict=True)]
    cpu = [
        lg["cpu_us_per_msg"] / b["cpu_us_per_msg"]
        for b, lg in zip(rows["bare"], rows["loadgen"], strict=True)
    ]
    print(
        f"throughput loadgen/bare per round {[f'{r:.3f}' for r in ratios]} "
        f"median {statistics.median(ratios):.3f}"
    )
    print(
        f"CPU per message loadgen/bare per round {[f'{r:.2f}' for r in cpu]} "
        f"median {statistics.median(cpu):.2f}"
    )


if __name__ == "__main__":
    main()
