"""``loadgen worker``: serve runs for a coordinator (:mod:`loadgen.distributed.server`)."""

from __future__ import annotations

import sys

import click

from loadgen.base.cpus import pin, usable_cpus
from loadgen.cli import options as opts
from loadgen.distributed.server import DEFAULT_MAX_BODY_BYTES, serve
from loadgen.distributed.spawn import ANNOUNCEMENT, TOKEN_ENV

WORKER_EXAMPLES = """\b
Examples:
  loadgen worker --bind 127.0.0.1:8080
  LOADGEN_TOKEN=secret loadgen worker --bind 0.0.0.0:8080 --metrics-port 9100
      then, on the coordinator: loadgen run --workers http://HOST:8080 --token ...
"""


@click.command(epilog=WORKER_EXAMPLES)
@click.option(
    "--bind",
    metavar="HOST:PORT",
    default="127.0.0.1:8080",
    show_default=True,
    help="HOST:PORT to listen on (port 0: any free one). Not loopback needs a token.",
)
@click.option(
    "--token",
    metavar="TOKEN",
    envvar=TOKEN_ENV,
    default=None,
    help=f"Require this bearer token on every request (or {TOKEN_ENV}).",
)
@click.option(
    "--max-body-mb",
    metavar="N",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_BODY_BYTES // 2**20,
    show_default=True,
    help="Largest request body accepted (the payload pool travels in one).",
)
@click.option(
    "--cpus",
    metavar="CPUS",
    default=None,
    help="Pin the worker to these CPUs (1, 0,2 or 0-3; Linux).",
)
@click.option("--exit-with-stdin", is_flag=True, hidden=True)
@opts.METRICS
def worker(
    bind: str,
    token: str | None,
    max_body_mb: int,
    cpus: str | None,
    exit_with_stdin: bool,
    metrics: tuple[str, int] | None,
) -> None:
    """Serve runs for a coordinator (`loadgen run --workers URL,...`) until stopped.

    With --metrics-port it also serves its own figures (each interval the coordinator takes).
    """
    if cpus is not None:
        pin(usable_cpus(cpus))  # before any driver exists: its threads inherit it

    def announce(url: str) -> None:
        click.echo(f"{ANNOUNCEMENT}{url}")
        sys.stdout.flush()

    serve(
        bind,
        token or None,
        max_body_bytes=max_body_mb * 2**20,
        announce=announce,
        exit_with_stdin=exit_with_stdin,
        metrics=metrics,
        announce_metrics=lambda url: click.echo(f"loadgen worker metrics on {url}", err=True),
    )
