"""Runs over two simulated hosts, against real brokers on the bridge address.

Each worker can only be reached on its own host's address, and reaches the broker over the
bridge: a worker bound to loopback, a URL or an advertised broker address that says 127.0.0.1
fails these runs. A host cut off mid-run (its link down: packets dropped, nothing reset) must be
reported lost within the stated bound and leave a partial result; a host that comes up after the
coordinator started must still join the run.
"""

import time

import pytest

from loadgen.distributed.client import CONNECT_TIMEOUT_S
from loadgen.distributed.ensemble import COUNTERS_TIMEOUT_S
from loadgen.distributed.spawn import START_TIMEOUT_S, announced_url

pytestmark = pytest.mark.integration

DURATION = "4s"
LOST_BOUND_S = COUNTERS_TIMEOUT_S + 2.0
"""The README's bound for a host gone silent mid-run: the 10-s request deadline of the counters
the coordinator polls every quarter second, plus that quarter second and some scheduling."""


def run_over_two_hosts(kind, bridge_broker, worker_urls, coordinator, result_of):
    run = coordinator(kind, bridge_broker(kind), worker_urls, "--duration", DURATION)
    code = run.finish(120)
    assert code == 0, run.text("stderr")
    return check_exact(result_of(), worker_urls)


def check_exact(result, urls):
    """Producer on the first host, consumer on the second, every message received once."""
    run = result["run"]
    assert run["workers"] == urls
    assert run["workerRoles"] == {urls[0]: "producer", urls[1]: "consumer"}
    sent, received = result["totalMessagesSent"], result["totalMessagesReceived"]
    assert sent == received > result["run"]["workload"]["producerRate"] * 3  # 4 s at that rate
    assert run["workerTotals"][urls[0]]["sent"] == sent
    assert run["workerTotals"][urls[1]]["received"] == received
    assert (result["totalLost"], result["totalDuplicates"]) == (0, 0)
    return result


def test_kafka_over_two_hosts_counts_exactly_and_measures_both_clocks(
    bridge_broker, worker_urls, coordinator, result_of
):
    result = run_over_two_hosts("kafka", bridge_broker, worker_urls, coordinator, result_of)
    run = result["run"]
    offsets, bounds = run["clockOffsetsMs"], run["clockOffsetBoundsMs"]
    print(f"clock offsets (ms) {offsets}, bounds (ms) {bounds}, e2e skew bound (ms) "
          f"{run['e2eClockSkewBoundMs']}")  # fmt: skip
    assert set(offsets) == set(bounds) == set(worker_urls)
    for url in worker_urls:
        # both simulated hosts share one kernel's clock: the true offset is 0, inside each bound
        assert abs(offsets[url]) <= bounds[url] + 0.001
        assert 0 < bounds[url] < 5
    assert 0 <= run["e2eClockSkewBoundMs"] < 10


def test_rabbitmq_over_two_hosts_counts_exactly(bridge_broker, worker_urls, coordinator, result_of):
    run_over_two_hosts("rabbitmq", bridge_broker, worker_urls, coordinator, result_of)


def test_pulsar_over_two_hosts_counts_exactly(bridge_broker, worker_urls, coordinator, result_of):
    run_over_two_hosts("pulsar", bridge_broker, worker_urls, coordinator, result_of)


@pytest.mark.timeout(150)
def test_a_host_cut_off_mid_run_is_reported_lost_within_the_bound(
    network, bridge_broker, worker_urls, coordinator, result_of
):
    run = coordinator("kafka", bridge_broker("kafka"), worker_urls, "--duration", "60s")
    run.first("stdout", "[measure]", 60)
    time.sleep(2)  # about 3 s of load measured on both hosts before the cut
    consumer_host = network.hosts[1]
    consumer_host.cut()
    cut_at = time.monotonic()
    try:
        code = run.finish(LOST_BOUND_S + 30)
        ended_at = time.monotonic()
    finally:
        consumer_host.reconnect()  # so its worker can be stopped cleanly
    lost_at = run.first("stderr", "lost during the run", 0)
    print(f"loss of host detected after {lost_at - cut_at:.2f} s, run ended after "
          f"{ended_at - cut_at:.2f} s")  # fmt: skip
    # silence, not a refused connection: only the request deadline can tell
    assert COUNTERS_TIMEOUT_S - 0.5 <= lost_at - cut_at <= LOST_BOUND_S
    assert ended_at - lost_at < 5  # no wait on the lost worker (its /close is not sent)
    assert code == 1, run.text("stderr")
    assert worker_urls[1] in run.text("stderr")
    result = result_of()
    assert result["incomplete"] is True and result["stopReason"] == "worker-lost"
    assert list(result["run"]["lostWorkers"]) == [worker_urls[1]]
    totals, rate = result["run"]["workerTotals"], result["run"]["workload"]["producerRate"]
    # what was measured before the cut is kept: more than a second's worth on each host
    assert totals[worker_urls[0]]["sent"] > rate
    assert totals[worker_urls[1]]["received"] > rate


@pytest.mark.parametrize(
    ("late_s", "options"),
    [
        (CONNECT_TIMEOUT_S - 6, ("--workers-wait", f"{CONNECT_TIMEOUT_S:g}s")),
        (CONNECT_TIMEOUT_S + 2, ("--workers-wait", "30s")),
    ],
    ids=["within-the-default-wait", "beyond-it"],
)
def test_a_host_that_comes_up_late_joins_the_run(
    late_s, options, network, bridge_broker, start_worker, token, coordinator, result_of
):
    first, late = network.hosts
    port = 18080  # the namespace is this module's own: any port is free in it
    early = start_worker(first)
    listening = announced_url(early, time.monotonic() + START_TIMEOUT_S, "the early worker")
    urls = [listening, f"http://{late.address}:{port}"]
    run = coordinator("kafka", bridge_broker("kafka"), urls, "--duration", DURATION, *options)
    time.sleep(late_s)  # the late host's boot, as a compose file starts containers
    assert run.process.poll() is None, run.text("stderr")  # still waiting for it
    start_worker(late, port)
    code = run.finish(120)
    assert code == 0, run.text("stderr")
    check_exact(result_of(), urls)
