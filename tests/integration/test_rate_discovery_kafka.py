"""OMB's rate discovery against a real Kafka broker (tansu, or Apache Kafka with
``--loadgen-upstream``): it must find the limit of the broker or of the one producer."""

import pytest

from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import run_one

pytestmark = [pytest.mark.integration, pytest.mark.long]


def test_discovery_ramps_up_then_backs_off_when_the_broker_falls_behind(
    kafka_spec, tailing, tmp_path
):
    # 30 s, ten periods: Apache Kafka took the doubling to 320k msg/s (the sixth period) with
    # no backlog, where tansu falls behind by the fourth
    options = RunOptions(duration_s=30, warmup_s=0, stats_interval_s=3)
    report = run_one(RunRequest(tailing(0, partitions=4), kafka_spec, options, out_dir=tmp_path))
    discovery = report.result["rateDiscovery"]
    history = discovery["history"]
    reasons = [change["reason"] for change in history]
    assert reasons[:3] == ["initial", "ramp-up", "ramp-up"], history  # 10k, 20k: easy for tansu
    backoffs = [i for i, reason in enumerate(reasons) if reason.endswith("-backlog")]
    assert backoffs, history  # one Python producer cannot double forever
    first = backoffs[0]
    assert history[first]["rate"] < history[first - 1]["rate"]
    assert discovery["finalRate"] == history[-1]["rate"]
    # the load followed the controller: the periods' publish rates changed with it
    assert max(report.result["publishRate"]) > 2 * min(report.result["publishRate"])
    assert report.result["totalMessagesReceived"] == report.result["totalMessagesSent"]
