"""The issue's must-show for RabbitMQ Streams, as a user types it: ``loadgen brokers up
rabbitmq-streams --port P``, then configs/drivers/rabbitmq-streams.yaml (its URI pointed at it)
at 5k msg/s for 20 s, exact counts, the rate held; ``brokers down rabbitmq-streams`` leaves no
process behind (the node's beam, and epmd when this start launched it)."""

from pathlib import Path

import psutil
import pytest
import yaml
from tests.upstream.test_kafka_upstream_cli import env, loadgen, pids_of, run_exact

from loadgen.driver_api.local.process import free_port, process_alive

pytestmark = [pytest.mark.integration, pytest.mark.long]
__all__ = ["env"]  # the fixture, used by name

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = dict(
    name="rabbitmq-streams-5k", topics=1, partitionsPerTopic=1, messageSize=1024,
    producersPerTopic=1, producerRate=5000, subscriptionsPerTopic=1, consumerPerSubscription=1,
    testDurationMinutes=1,
)  # fmt: skip


def beams_under(pids: list[int]) -> list[int]:
    """The Erlang VMs (beam.smp) the started processes run: the node, under its start script."""
    found = []
    for pid in pids:
        try:
            children = psutil.Process(pid).children(recursive=True)
        except psutil.NoSuchProcess:
            continue
        found += [child.pid for child in children if child.name().startswith("beam")]
    return found


def test_the_driver_file_on_the_local_broker_at_5k_for_20_s(env, tmp_path):
    port = free_port()
    up = loadgen("brokers", "up", "rabbitmq-streams", "--port", port, env=env, timeout=90)
    assert up.returncode == 0, up.stderr
    pids = pids_of(Path(env["LOADGEN_STATE_DIR"]))
    beams: list[int] = []
    try:
        shipped = yaml.safe_load((ROOT / "configs/drivers/rabbitmq-streams.yaml").read_text())
        uri = f"rabbitmq-stream://guest:guest@127.0.0.1:{port}/%2F"
        driver_file = tmp_path / "rabbitmq-streams.yaml"
        driver_file.write_text(yaml.safe_dump(shipped | {"uris": [uri]}))
        workload_file = tmp_path / "workload.yaml"
        workload_file.write_text(yaml.safe_dump(WORKLOAD))
        result = run_exact(
            driver_file, workload_file, tmp_path / "out", env, warmup="3s", duration="20s"
        )
        assert result["totalMessagesSent"] >= 5000 * 20
        assert result["aggregatedEndToEndLatency50pct"] > 0
        beams = beams_under(pids)
        assert beams
    finally:
        down = loadgen("brokers", "down", "rabbitmq-streams", env=env, timeout=90)
    assert down.returncode == 0, down.stderr
    assert pids and not [pid for pid in pids if process_alive(pid)]
    assert not [pid for pid in beams if process_alive(pid)]
