"""``loadgen brokers up|down|status``: the local brokers, for development and tests."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from loadgen.driver_api.local.process import LocalBroker


@click.command()
@click.argument("action", type=click.Choice(["up", "down", "status"]))
@click.argument("kind", required=False)
@click.option("--port", type=int, default=None, help="Port for `up` (default: the broker's usual).")
@click.option(
    "--secure",
    is_flag=True,
    help="Behind TLS and a checked login (SASL SCRAM and PLAIN, a token); `up` prints a driver "
    "file that logs in. With down: only the secured ones.",
)
@click.option(
    "--upstream",
    is_flag=True,
    help="The project's own server (Apache Kafka, Apache Pulsar's or Pravega's standalone, from "
    "$KAFKA_HOME, $PULSAR_HOME, $PRAVEGA_HOME or Maven Central) instead of the stand-in; `up` "
    "prints its driver file. With down: only the upstream ones.",
)
@click.option(
    "--nodes",
    type=click.IntRange(1, 5),
    default=None,
    help="With up --upstream: a cluster of N nodes on this host (3 controllers from 3 nodes "
    "on; default 1).",
)
def brokers(
    action: str, kind: str | None, port: int | None, secure: bool, upstream: bool, nodes: int | None
) -> None:
    """Start, stop or show local brokers for development and tests (127.0.0.1 only).

    \b
    up [KIND]       start one (default kafka: tansu; --upstream: the project's own server)
    down [KIND]     stop every running one of KIND (of every kind without KIND)
    status [KIND]   list the running ones (exit 1 when none)
    """
    from loadgen.local_brokers import catalogue as local

    if action == "up":
        broker, started = local.up(
            kind or "kafka", port=port, secure=secure, upstream=upstream, nodes=nodes
        )
        shown = local.Variant(kind or "kafka", upstream=upstream, secure=secure).shown
        verb = "up" if started else "already running"
        click.echo(f"{shown} {verb} at {broker.address} ({describe(broker)})")
        for name, url in broker.endpoints.items():
            click.echo(f"{name}: {url}")
        if broker.driver_file:
            click.echo(f"driver file: {broker.driver_file}")
    elif action == "down":
        stopped = local.down(kind, secure=secure or None, upstream=upstream or None)
        for variant in stopped:
            click.echo(f"{variant.shown} stopped")
        if not stopped:
            click.echo(f"{kind} was not running" if kind else "no local broker was running")
    else:
        found = local.running(kind)
        for variant, broker in found:
            click.echo(f"{variant.shown} running at {broker.address} ({describe(broker)})")
        if not found:
            click.echo(f"{kind} not running" if kind else "no local broker running")
            sys.exit(1)


def describe(broker: LocalBroker) -> str:
    """What serves, its nodes, pids and logs: what a user needs to find and stop it by hand."""
    pids = [broker.pid, *broker.node_pids, *broker.helper_pids]
    nodes = len(broker.node_addresses)
    parts = [
        broker.server,
        f"{nodes} nodes at {', '.join(broker.node_addresses)}" if nodes > 1 else "",
        f"pid {pids[0]}" if len(pids) == 1 else f"pids {' '.join(map(str, pids))}",
        f"log {broker.log_path}" if nodes <= 1 else f"logs {Path(broker.log_path).parent.parent}",
    ]
    return ", ".join(part for part in parts if part)
