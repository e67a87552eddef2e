"""The must-show for Redis Streams, as a user meets it: ``loadgen brokers up redis --port P``,
then OMB's own ``redis.yaml`` pointed at it (``redisHost``/``redisPort``), 1 topic at 5k msg/s
for 20 s, exact counts with the rate held; ``brokers down`` leaves no process."""

import os
import re
from pathlib import Path

import pytest
import yaml
from tests.upstream.test_kafka_upstream_cli import loadgen, pids_of, run_exact

from loadgen.driver_api.local.process import free_port, process_alive

pytestmark = [pytest.mark.integration, pytest.mark.long]

OMB_REDIS_YAML = Path(__file__).resolve().parents[2] / "configs/drivers/redis.yaml"
WORKLOAD = dict(
    name="omb-redis", topics=1, partitionsPerTopic=1, messageSize=1024, producersPerTopic=1,
    producerRate=5000, subscriptionsPerTopic=1, consumerPerSubscription=1, testDurationMinutes=1,
)  # fmt: skip


def test_omb_redis_yaml_on_the_local_broker_holds_5k_exactly_and_down_leaves_nothing(tmp_path):
    env = {**os.environ, "LOADGEN_STATE_DIR": str(tmp_path / "state")}
    port = free_port()
    up = loadgen("brokers", "up", "redis", "--port", port, env=env)
    pids: list[int] = []
    try:
        assert up.returncode == 0, up.stderr
        assert re.search(rf"^redis up at 127\.0\.0\.1:{port} \(redis-server 7", up.stdout, re.M)
        pids = pids_of(tmp_path / "state")
        driver = yaml.safe_load(OMB_REDIS_YAML.read_text()) | {"redisPort": port}
        assert driver["driverClass"].endswith("RedisBenchmarkDriver")
        driver_file = tmp_path / "redis.yaml"
        driver_file.write_text(yaml.safe_dump(driver))
        workload_file = tmp_path / "workload.yaml"
        workload_file.write_text(yaml.safe_dump(WORKLOAD))
        result = run_exact(
            driver_file, workload_file, tmp_path / "out", env, warmup="2s", duration="20s"
        )
        assert result["driver"] == "Redis"  # OMB's name field
        assert result["totalMessagesSent"] >= 5000 * 20
        assert result["aggregatedEndToEndLatency50pct"] > 0
    finally:
        down = loadgen("brokers", "down", "redis", env=env)
    assert down.returncode == 0 and "redis stopped" in down.stdout
    assert pids and not any(process_alive(pid) for pid in pids)
    assert loadgen("brokers", "status", "redis", env=env).returncode == 1
