"""Faults inside a run (``--fault``) on the single-node local brokers ``loadgen brokers up``
starts, each run ending by itself and saying what the fault cost:

- RabbitMQ, a quorum queue with publisher confirms, its node stopped and started again on its
  data: nothing confirmed is lost; the outage and the recovery are measured.
- tansu keeps messages in memory only. Restarted under a consumer that reads every ~0.5 s, it
  drops what it had acknowledged and not yet delivered: the run counts those messages lost and
  the console names them. Killed for longer than the printed driver file's consumer session,
  its consumer mostly never reads again (sometimes tansu takes it back): the run says which.
- pulsar-lite keeps what it acknowledged in RocksDB: killed and started again, it loses
  nothing, and what it delivers twice is counted.

Each test starts its broker under its own ``$LOADGEN_STATE_DIR``, on a free port, stops it
after, and runs ``loadgen run`` as a user would, on a driver file made from the broker's
driver section.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from loadgen.base.errors import LoadgenError
from loadgen.driver_api.local.process import LocalBroker, free_port
from loadgen.local_brokers import catalogue
from loadgen.pytest_plugin.require import unavailable

pytestmark = [pytest.mark.integration, pytest.mark.long]

WINDOWS = ("before", "during", "after")
RUN_TIMEOUT_S = 150
"""A 22-s run, a 10-s drain when messages are missing, a broker's start and the teardown."""


@dataclass
class Run:
    code: int
    result: dict[str, Any]
    console: str
    seconds: float

    @property
    def fault(self) -> dict[str, Any]:
        [fault] = self.result["faults"]
        return fault

    def summary(self) -> str:
        """The console's ``Fault 1: ...`` line."""
        [line] = [line for line in self.console.splitlines() if line.startswith("Fault 1: ")]
        return line


@pytest.fixture
def state_dir(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "state"
    monkeypatch.setenv("LOADGEN_STATE_DIR", str(folder))
    return folder


@contextlib.contextmanager
def local_broker(kind: str) -> Iterator[LocalBroker]:
    """``loadgen brokers up KIND`` (on a free port: other suites use the usual ones), and
    ``down`` after, whatever happened."""
    try:
        broker, _ = catalogue.up(kind, free_port())
    except (LoadgenError, ImportError) as missing:
        unavailable(f"no local {kind} here: {missing}")
    try:
        yield broker
    finally:
        catalogue.down(kind)
    assert catalogue.running(kind) == []


def run_with_fault(broker: LocalBroker, folder: Path, fault: str, rate: int, **changes: Any) -> Run:
    """A 20-s ``loadgen run`` at ``rate`` msg/s (warm-up 2 s) with ``fault``, on the broker's
    driver section with ``changes`` (a key ending in ``+`` appends to that field)."""
    config: dict[str, Any] = {"name": broker.kind, "driver": broker.kind, **broker.driver_config}
    for key, value in changes.items():
        if key.endswith("+"):
            config[key[:-1]] += value
        else:
            config[key] = value
    driver = folder / "driver.yaml"
    driver.write_text(yaml.safe_dump(config))
    workload = folder / "workload.yaml"
    workload.write_text(yaml.safe_dump(dict(
        name="faults", topics=1, partitionsPerTopic=4, messageSize=256, producersPerTopic=1,
        producerRate=rate, subscriptionsPerTopic=1, consumerPerSubscription=1,
        testDurationMinutes=1,
    )))  # fmt: skip
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "loadgen", "run", "-d", str(driver), str(workload),
         "--warmup", "2s", "--duration", "20s", "-o", str(folder / "out"), "--no-report",
         "--fault", fault],
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=dict(os.environ),
    )  # fmt: skip
    seconds = time.monotonic() - began
    found = list((folder / "out").glob("*.json"))
    result = json.loads(found[0].read_text()) if found else {}
    return Run(done.returncode, result, done.stderr, seconds)


def ended_by_itself(run: Run) -> None:
    """Exit 0 (losses are reported, not an error, without --slo), the whole run measured,
    the fault made."""
    assert run.code == 0, run.console[-3000:]
    result, fault = run.result, run.fault
    assert result["incomplete"] is False and "stopReason" not in result
    assert fault["error"] is None and fault["node"] == 1
    assert fault["endedAt"] >= fault["startedAt"]


def lost_by_window(fault: dict[str, Any]) -> list[int]:
    return [fault["windows"][name]["lost"] for name in WINDOWS]


def measured(run: Run) -> str:
    fault, result = run.fault, run.result
    return (
        f"{fault['action']}: unavailable {fault['unavailableSeconds']} s, recovery "
        f"{fault['recoverySeconds']} s ({fault['recoveryReason']}), lost {result['totalLost']} "
        f"(fault {fault['lost']}, by window {lost_by_window(fault)}), duplicated "
        f"{result['totalDuplicates']}, run {run.seconds:.1f} s"
    )


def test_rabbitmq_quorum_queue_with_confirms_loses_nothing_when_its_node_stops(state_dir, tmp_path):
    with local_broker("rabbitmq") as broker:
        run = run_with_fault(
            broker, tmp_path, "at=7s action=stop target=broker:1 for=6s", 1000,
            queueType="quorum", messagePersistence=True, confirms=True,
        )  # fmt: skip
        assert catalogue.status("rabbitmq").pid != broker.pid  # started again, and recorded
    print(measured(run))
    ended_by_itself(run)
    result, fault = run.result, run.fault
    assert result["totalLost"] == 0 and fault["lost"] == 0, result["deliveryAccounting"]
    assert lost_by_window(fault) == [0, 0, 0]
    # publishes fail while the node is down (counted as errors, not sent); a message whose
    # confirm was lost with the connection may still have been stored and delivered: at most
    # the confirm window's worth (maxInFlight)
    assert result["totalPublishErrors"] > 0
    unconfirmed = result["totalMessagesReceived"] - result["totalMessagesSent"]
    assert 0 <= unconfirmed - result["totalDuplicates"] <= 1000
    # down 6 s: no publish was confirmed for at least that long, whole seconds
    assert isinstance(fault["unavailableSeconds"], float) and fault["unavailableSeconds"] >= 5.0
    recovery = fault["recoverySeconds"]
    if recovery is None:  # a slow host: said why, and the verdict does not say recovered
        assert fault["recoveryReason"] and result["verdicts"]["faults"]["recovered"] is not True
    else:
        assert isinstance(recovery, float) and result["verdicts"]["faults"]["recovered"] is True
    port = broker.address.rpartition(":")[2]
    assert f"fault: stop node 1 (127.0.0.1:{port}) at 7s for 6s started" in run.console
    assert f"fault: stop node 1 (127.0.0.1:{port}) at 7s for 6s ended" in run.console
    summary = run.summary()
    assert summary.startswith("Fault 1: stop node 1 at 7s for 6s: unavailable ")
    assert summary.endswith(f"; lost 0, duplicated {fault['duplicated']:,}")
    assert re.search(r"\d lost\b", run.console) is None  # the delivery warning names none


TANSU_RATE = 2000
LAGGING_CONSUMER = "\nfetch.wait.max.ms=500"
"""tansu holds a fetch until ``fetch.wait.max.ms``: its consumer reads every few hundred ms, so
at any moment that much of what tansu acknowledged is in its memory only."""


def test_tansu_restarted_drops_what_it_had_not_delivered_and_the_run_counts_it_lost(
    state_dir, tmp_path
):
    with local_broker("kafka") as broker:
        run = run_with_fault(
            broker, tmp_path, "at=7s action=restart target=broker:1", TANSU_RATE,
            **{"consumerConfig+": LAGGING_CONSUMER},
        )  # fmt: skip
    print(measured(run))
    ended_by_itself(run)
    result, fault = run.result, run.fault
    lost = result["totalLost"]
    # what tansu had acknowledged and not yet delivered when it stopped: some, and less than
    # a second's worth (the consumer read every ~0.5 s at most)
    assert 0 < lost < TANSU_RATE, result["deliveryAccounting"]
    # the consumer read on after the restart, so nothing else is missing: no backlog left
    assert fault["windows"]["after"]["consumeRate"] > 0.9 * TANSU_RATE
    assert not result["totalUnread"]
    sent, received = result["totalMessagesSent"], result["totalMessagesReceived"]
    assert received == sent - lost + result["totalDuplicates"]
    # the console names the loss: the drain's count, the delivery warning, the fault's line
    assert f"{lost} messages were not received within the 10 s drain" in run.console
    assert f"WARNING: messages not delivered exactly once: {lost:,} lost" in run.console
    assert run.summary().startswith("Fault 1: restart node 1 at 7s: unavailable ")
    assert run.summary().endswith(f"; lost {fault['lost']:,}, duplicated {fault['duplicated']:,}")
    # every loss is in one of the fault's windows ...
    assert sum(lost_by_window(fault)) == lost
    # ... and all of them are the fault's: what it dropped was acknowledged just before it, in
    # the last interval of the before window, which the fault's own count takes in
    assert fault["lost"] == lost, lost_by_window(fault)


def test_tansu_killed_longer_than_the_consumer_session_is_reported_as_it_ended(state_dir, tmp_path):
    """The printed driver section's 2-s consumer session lapses while tansu is down 5 s. What
    follows is tansu's, not loadgen's: mostly its consumer reads nothing more, but in some runs
    (CI runs: reading again 1.9 s after the restart) tansu takes the consumer back. Either way
    the run ends by itself and says what happened. A consumer that never read again: deliveries
    stopped and never resumed, the consumers fell behind, and every message acknowledged after
    the restart counts as lost (with no backlog known at the end, ``totalUnread`` null), though
    tansu may still hold them. A consumer taken back: the consumers read on at the rate and
    nothing is said to be unrecovered; a consume outage is reported only if messages were due
    when tansu died (one CI run had read all it had been acknowledged: none, and none lost)."""
    with local_broker("kafka") as broker:
        run = run_with_fault(
            broker, tmp_path, "at=7s action=kill target=broker:1 for=5s", TANSU_RATE
        )
    print(measured(run))
    ended_by_itself(run)
    result, fault = run.result, run.fault
    after = fault["windows"]["after"]
    assert after["publishRate"] > 0.9 * TANSU_RATE
    lost, unread = result["totalLost"], result["totalUnread"] or 0
    sent, received = result["totalMessagesSent"], result["totalMessagesReceived"]
    assert received == sent - lost - unread + result["totalDuplicates"]
    assert f"{lost:,} lost" in run.console or lost == 0
    assert run.summary().endswith(f"; lost {fault['lost']:,}, duplicated {fault['duplicated']:,}")
    # a consume outage is deliveries stopped with messages due: at most one here, as long as
    # the broker was down (its start is the last delivery, its end the first after the restart)
    stalls = [outage for outage in result["outages"] if outage["role"] == "consume"]
    assert len(stalls) <= 1, stalls
    for stalled in stalls:
        assert stalled["seconds"] >= fault["unavailableSeconds"] - 1.0, (stalled, fault)
    if after["consumeRate"] == 0:
        [stalled] = stalls
        assert stalled["recovered"] is False
        assert result["verdicts"]["consumers"]["keptUp"] is False
        assert "not recovered by the end" in run.console
        assert "consumers: FALLING BEHIND" in run.console
        assert after["lost"] >= after["publishRate"] * after["seconds"] * 0.9  # all of them
    else:
        assert all(stalled["recovered"] for stalled in stalls), stalls
        assert after["consumeRate"] > 0.9 * TANSU_RATE
        assert isinstance(fault["recoverySeconds"], float), fault["recoveryReason"]
        assert "not recovered by the end" not in run.console
        if not stalls:  # nothing was due when tansu died, so nothing it held was lost
            assert lost == 0, result["deliveryAccounting"]


def test_pulsar_lite_killed_and_started_again_loses_nothing_and_counts_what_came_twice(
    state_dir, tmp_path
):
    with local_broker("pulsar") as broker:
        run = run_with_fault(broker, tmp_path, "at=7s action=kill target=broker:1 for=5s", 2000)
        assert catalogue.status("pulsar").pid != broker.pid
    print(measured(run))
    ended_by_itself(run)
    result, fault = run.result, run.fault
    # RocksDB kept everything acknowledged; deliveries not yet acknowledged by the consumer
    # when the broker died come again (at least once), and are counted
    assert result["totalLost"] == 0 and fault["lost"] == 0 and lost_by_window(fault) == [0, 0, 0]
    duplicates = result["totalDuplicates"]
    sent, received = result["totalMessagesSent"], result["totalMessagesReceived"]
    assert received == sent + duplicates
    assert fault["duplicated"] <= duplicates
    assert (f"{duplicates:,} duplicated" in run.console) == (duplicates > 0)
    assert fault["unavailableSeconds"] >= 4.0  # down 5 s: nothing acknowledged, whole seconds
    assert isinstance(fault["recoverySeconds"], float), fault["recoveryReason"]
    assert run.summary().startswith("Fault 1: kill node 1 at 7s for 5s: unavailable ")
    assert run.summary().endswith(f"; lost 0, duplicated {fault['duplicated']:,}")
