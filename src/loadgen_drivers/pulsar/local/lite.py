"""A local Pulsar broker: pulsar-lite, a single-node Pulsar-protocol broker shipped in a wheel.

It is spawned from the binary inside the package (its Python wrapper passes no config file, so
its metrics would bind 0.0.0.0:8080) with a TOML config that disables metrics, on 127.0.0.1 (or
the address given) and a fresh data dir. pulsar-lite has no admin REST: ``default_partitions``
(one setting for every auto-created topic) is the only way to get partitions, so the driver
section given back has no ``httpUrl`` and the driver falls back to auto-created topics. Its
known defects (duplicates on Exclusive/Failover subscriptions, catch-up stalls with receiver
queues above 200 on partitioned topics, broken seek) are answered by
:data:`PULSAR_LITE_CLIENT_SETTINGS`, never by driver defaults. Another, the last entries of a
partition left undispatched until the next publish on it or a new consumer on the subscription
(a run's final messages then miss the drain), is made rarer by the broker's config
(:data:`WRITE_BUFFER_HIGH_WATER_MARK`); tests/integration/test_tailing_pulsar.py reads back any
that remain.
"""

from __future__ import annotations

import shutil
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
DEFAULT_PARTITIONS = 16

PULSAR_LITE_CLIENT_SETTINGS: dict[str, Any] = {
    "client": {"ioThreads": 1},
    "producer": {"blockIfQueueFull": True},
    "consumer": {"subscriptionType": "Shared", "receiverQueueSize": 200},
}
"""What pulsar-lite needs, measured (configs/drivers/pulsar-local.yaml says
the same): Exclusive and Failover deliver duplicates, so Shared; a partitioned catch-up stalls
with receiver queues above 200; one I/O thread, since client and broker share the cores."""


def pulsar_lite_binary() -> Path:
    try:
        import pulsar_lite
    except ImportError:
        raise MissingExtra("pulsar-lite", "test") from None
    return Path(pulsar_lite.__file__).parent / "bin" / "pulsar-lite"


def pulsar_lite_driver_config(address: str) -> dict[str, Any]:
    """A Pulsar driver section pointing at pulsar-lite on ``address``, with what it needs."""
    settings = PULSAR_LITE_CLIENT_SETTINGS
    return {**settings, "client": {**settings["client"], "serviceUrl": f"pulsar://{address}"}}


def _remove_old_data(folder: Path) -> None:
    """pulsar-lite keeps ``X.rocksdb/`` and ``X.metadata.json`` for ``--db-path X``."""
    for old in folder.glob("pulsar-lite-*.rocksdb"):
        shutil.rmtree(old, ignore_errors=True)
    for old in folder.glob("pulsar-lite-*.metadata.json"):
        old.unlink(missing_ok=True)


WRITE_BUFFER_HIGH_WATER_MARK = 64 * 1024 * 1024
"""Bytes a client connection may have waiting to be written before pulsar-lite stops sending to
it (its default is 64 KiB). Above the mark its Shared dispatcher parks the entry it could not
send, and nothing dispatches it until the next publish on that partition or a new consumer.
Measured with bursts of 3,000 messages at 30k msg/s on 16 partitions: at the default, 9 of 246
burst ends left entries undispatched; at 64 MiB, 0 of 457. The cause is inferred from the
broker's debug log and that A/B; pulsar-lite 0.2.0's source is not published. The receiver
queues bound what a consumer can have in flight far below the mark."""


def _toml(default_partitions: int) -> str:
    return (
        'log_level = "info"\n'
        f"default_partitions = {default_partitions}\n"
        f"pulsar_channel_write_buffer_high_water_mark_bytes = {WRITE_BUFFER_HIGH_WATER_MARK}\n"
        f"pulsar_channel_write_buffer_low_water_mark_bytes = {WRITE_BUFFER_HIGH_WATER_MARK // 2}\n"
        "[metrics]\n"
        "enabled = false\n"
    )


def start_pulsar_lite(
    port: int | None = None,
    data_dir: Path | None = None,
    *,
    detach: bool = False,
    default_partitions: int = DEFAULT_PARTITIONS,
    keep_data: bool = False,
    host: str = "127.0.0.1",
) -> LocalBroker:
    """Start pulsar-lite on ``host``:``port`` (a free one by default) and wait until it accepts.

    Every topic it auto-creates gets ``default_partitions`` partitions (0: non-partitioned).
    The data is fresh: earlier pulsar-lite data in a ``data_dir`` given is removed, unless
    ``keep_data`` (a restart of the broker that stopped on this port and ``data_dir``).
    ``detach`` starts it in its own session so it outlives this process (``loadgen brokers up``).
    """
    binary = pulsar_lite_binary()
    chosen, folder, temporary = claim("pulsar", port, data_dir, host=host)
    if not keep_data:
        _remove_old_data(folder)
    db_path = folder / f"pulsar-lite-{chosen}"
    config_path = folder / f"pulsar-lite-{chosen}.toml"
    config_path.write_text(_toml(default_partitions))
    log_path = folder / f"pulsar-lite-{chosen}.log"
    address = f"{host}:{chosen}"
    command = [str(binary), "--config", str(config_path), "--addr", address]
    process = spawn_logged([*command, "--db-path", str(db_path)], log_path, detach=detach)
    broker = LocalBroker(
        "pulsar",
        address,
        process.pid,
        str(log_path),
        pulsar_lite_driver_config(address),
        temporary,
    )
    await_listening("pulsar-lite", broker, process, [chosen], READY_TIMEOUT_S, host)
    return broker
