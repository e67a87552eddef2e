"""The issue's must-show for NATS, as a user types it: ``loadgen brokers up nats --port P``,
then OMB's own nats.yaml (natsHostUrl pointed at it; its replicationFactor 3 meets a server
outside a cluster) at 5k msg/s for 20 s, exact counts, the rate held; ``brokers down nats``
leaves no process behind."""

from pathlib import Path

import pytest
import yaml
from tests.upstream.test_kafka_upstream_cli import env, loadgen, pids_of, run_exact

from loadgen.driver_api.local.process import free_port, process_alive

pytestmark = [pytest.mark.integration, pytest.mark.long]
__all__ = ["env"]  # the fixture, used by name

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = dict(
    name="nats-omb", topics=1, partitionsPerTopic=1, messageSize=1024, producersPerTopic=1,
    producerRate=5000, subscriptionsPerTopic=1, consumerPerSubscription=1, testDurationMinutes=1,
)  # fmt: skip


def test_omb_nats_yaml_on_the_local_broker_at_5k_for_20_s(env, tmp_path):
    port = free_port()
    up = loadgen("brokers", "up", "nats", "--port", port, env=env, timeout=60)
    assert up.returncode == 0, up.stderr
    state_dir = Path(env["LOADGEN_STATE_DIR"])
    pids = pids_of(state_dir)
    try:
        omb = yaml.safe_load((ROOT / "configs/drivers/nats.yaml").read_text())
        assert omb["replicationFactor"] == 3  # as OMB ships it
        driver_file = tmp_path / "nats.yaml"
        driver_file.write_text(yaml.safe_dump(omb | {"natsHostUrl": f"127.0.0.1:{port}"}))
        workload_file = tmp_path / "workload.yaml"
        workload_file.write_text(yaml.safe_dump(WORKLOAD))
        result = run_exact(
            driver_file, workload_file, tmp_path / "out", env, warmup="3s", duration="20s"
        )
        assert result["totalMessagesSent"] >= 5000 * 20
        assert result["aggregatedEndToEndLatency50pct"] > 0
    finally:
        down = loadgen("brokers", "down", "nats", env=env, timeout=60)
    assert down.returncode == 0, down.stderr
    assert pids and not [pid for pid in pids if process_alive(pid)]
