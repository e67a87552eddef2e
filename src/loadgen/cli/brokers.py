"""``loadgen brokers up|down|status``: the local brokers, for development and tests."""

from __future__ import annotations

import sys

import click


@click.command()
@click.argument("action", type=click.Choice(["up", "down", "status"]))
@click.argument("kind", default="kafka")
@click.option("--port", type=int, default=None, help="Port for `up` (default: the broker's usual).")
@click.option(
    "--secure",
    is_flag=True,
    help="Kafka or Pulsar behind TLS and a checked login (SASL SCRAM, a token); `up` prints a "
    "driver file that logs in.",
)
def brokers(action: str, kind: str, port: int | None, secure: bool) -> None:
    """Start, stop or show a local broker for development and tests (127.0.0.1 only)."""
    from loadgen.local_brokers import catalogue as local

    if action == "up":
        broker = local.up(kind, port=port, secure=secure)
        click.echo(f"{kind} up at {broker.address} (pid {broker.pid}, log {broker.log_path})")
        if broker.driver_file:
            click.echo(f"driver file: {broker.driver_file}")
    elif action == "down":
        stopped = local.down(kind, secure=secure)
        click.echo(f"{kind} stopped" if stopped else f"{kind} was not running")
    else:
        broker = local.status(kind, secure=secure)
        click.echo(
            f"{kind} running at {broker.address} (pid {broker.pid})"
            if broker
            else f"{kind} not running"
        )
        if broker is None:
            sys.exit(1)
