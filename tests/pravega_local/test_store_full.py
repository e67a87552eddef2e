"""A full local Pravega: the writer is told and stops, and the run ends with the cause named.

The store holds at most ``--max-bytes`` and frees nothing while streams exist. An append past it is
answered ``SegmentIsSealed``; the local controller gives no successor segment, so the real client
ends the writer and fails the events it held, instead of reconnecting and resending for ever. The
Pravega driver takes that first failure as the end of the writer (the client reports the writes
after it as written, though it never sends them) and ends the run with the cause.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
import uuid
from pathlib import Path

import pytest
from tests.unit.test_pravega_producer import HeldWrites, settle

import loadgen
from loadgen.base.errors import RunAborted
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import run_one
from loadgen_drivers.pravega.events import stamped
from loadgen_drivers.pravega.local.launch import start_local_pravega
from loadgen_drivers.pravega.producer import EventProducer, WriteLoop, WriterStopped

pytestmark = pytest.mark.timeout(120)

STORE_BYTES = 4_000_000
"""About 2,500 events of the workload below (1 KiB random payloads are ~1.6 KB on the wire)."""
RATE = 2_000
"""msg/s: the store is full within 2 s."""
DURATION_S = 30
PARTITIONS = 4
RECV_ERROR = OSError("Error observed while writing an event RecvError(())")
"""What 0.3.8's ``write_event_async`` raises for an event its stopped writer dropped."""


@pytest.fixture
def small_pravega(tmp_path):
    """A local Pravega whose store fills in seconds; its log kept in ``tmp_path``."""
    broker = start_local_pravega(log_dir=tmp_path / "pravega", max_bytes=STORE_BYTES)
    yield broker
    broker.stop()


def fill_the_store(controller: str, out: Path) -> tuple[RunAborted, float]:
    """A tailing run of ``DURATION_S`` at ``RATE``: the RunAborted it ends with, and when."""
    workload = loadgen.workload(
        name="pravega full store",
        topics=1,
        partitionsPerTopic=PARTITIONS,
        messageSize=1024,
        subscriptionsPerTopic=1,
        consumerPerSubscription=1,
        producersPerTopic=1,
        producerRate=RATE,
        testDurationMinutes=DURATION_S / 60,
        warmupDurationMinutes=0,
    )
    client = {"controllerURI": controller, "scopeName": f"lg-{uuid.uuid4().hex[:8]}"}
    driver = DriverSpec("Pravega", "pravega", {"client": client}, "small local pravega")
    started = time.monotonic()
    with pytest.raises(RunAborted) as aborted:
        run_one(RunRequest(workload, driver, RunOptions(stats_interval_s=1), out_dir=out))
    return aborted.value, time.monotonic() - started


@pytest.mark.integration
def test_a_run_that_fills_the_store_ends_at_once_with_the_cause_named(small_pravega, tmp_path):
    aborted, seconds = fill_the_store(small_pravega.address, tmp_path / "out")
    assert seconds < DURATION_S / 2  # ended by the full store, not by its duration
    assert (aborted.reason, aborted.exit_code) == ("error", 1)
    assert "the store is full" in str(aborted) and "--max-bytes" in str(aborted)
    assert aborted.result_path is not None
    result = json.loads(Path(aborted.result_path).read_text())
    assert (result["incomplete"], result["stopReason"]) == (True, "error")
    assert "the store is full" in result["run"]["stopDetail"]
    assert result["totalPublishErrors"] > 0
    # every event read was acknowledged, or failed in flight: the writer ended with events of
    # other segments stored but not yet acknowledged. A run cut short waits for no reads.
    sent, errors = result["totalMessagesSent"], result["totalPublishErrors"]
    assert 0 < result["totalMessagesReceived"] <= sent + errors
    assert result["totalDuplicates"] == 0
    small_pravega.stop()  # the store sums up its connections as it stops
    log = Path(small_pravega.log_path).read_text()
    assert log.count("segment store: FULL") == 1
    assert "closing a connection" not in log
    summary = re.search(r"segment store: (\d+) connections", log)
    assert summary is not None, log[-2000:]
    assert int(summary.group(1)) <= 4 * PARTITIONS  # a writer and a reader per segment, tables


class StoppingWrites:
    """``write_event_async`` as 0.3.8 behaves once its writer stopped: the events it held fail
    with ``RecvError`` (here the first write), and every later write completes as written."""

    def __init__(self):
        self.calls = 0

    def __call__(self, event, routing_key=None):
        self.calls += 1
        future = asyncio.get_running_loop().create_future()
        if self.calls == 1:
            future.set_exception(RECV_ERROR)
        else:
            future.set_result(None)
        return future


class Acks:
    def __init__(self, expected):
        self.errors = []
        self.expected = expected
        self.done = threading.Event()

    def __call__(self, error, *_):
        self.errors.append(error)
        if len(self.errors) == self.expected:
            self.done.set()


def test_a_stopped_writer_fails_every_later_write_and_ends_the_sends():
    writes, loop = StoppingWrites(), WriteLoop()
    try:
        producer = EventProducer(writes, loop, stamped)
        acks = Acks(expected=1)
        producer.send(None, b"x", acks, 0, 0)
        assert acks.done.wait(5)
        assert isinstance(acks.errors[0], WriterStopped)
        assert "the store is full" in str(acks.errors[0]) and "RecvError" in str(acks.errors[0])
        with pytest.raises(WriterStopped):
            producer.send(None, b"x", acks, 1, 0)  # the producer loop, and so the run, ends
        assert writes.calls == 1  # nothing more given to a client that would say it was written
        assert producer.flush(1.0) == 0
    finally:
        loop.close()


def test_writes_in_flight_when_the_writer_stops_are_failed_even_if_reported_written():
    writes, loop = HeldWrites(), WriteLoop()
    try:
        producer = EventProducer(writes, loop, stamped)
        acks = Acks(expected=3)
        for message_id in range(3):
            producer.send(None, b"x", acks, message_id, 0)
        settle(loop, lambda: None)
        assert len(writes.futures) == 3 and not acks.errors  # all three in flight

        def stop_the_writer():
            writes.futures[0].set_exception(RECV_ERROR)
            for future in writes.futures[1:]:
                future.set_result(None)  # as 0.3.8 reports writes its stopped writer dropped

        settle(loop, stop_the_writer)
        assert acks.done.wait(5)
        assert all(isinstance(error, WriterStopped) for error in acks.errors), acks.errors
    finally:
        loop.close()
