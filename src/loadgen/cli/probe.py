"""``loadgen probe URL``: a small steady load that prints latency every second and judges it."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from loadgen.base.errors import ConfigError
from loadgen.cli import options as opts
from loadgen.engine.stats import IntervalStats
from loadgen.running import stop
from loadgen.running.thresholds import parse_all

PROBE_EXAMPLES = """\b
Examples:
  loadgen probe kafka://127.0.0.1:9092
  loadgen probe pulsar://127.0.0.1:6650 --rate 1k --duration 30s --max-p99 20
  loadgen probe amqp://guest:guest@127.0.0.1:5672/ --json --slo 'e2e.p99.9<50ms'
  loadgen probe kafka+ssl://broker:9093 -d kafka-sasl.yaml --topic probe
"""


@click.command(epilog=PROBE_EXAMPLES)
@click.argument("url")
@click.option(
    "--rate",
    metavar="RATE",
    callback=opts.rate,
    default="100",
    show_default=True,
    help="Messages per second (1k, 1.5M).",
)
@click.option(
    "--duration",
    metavar="DURATION",
    callback=opts.duration("--duration"),
    default="10s",
    show_default=True,
    help="How long to probe; Ctrl-C ends it early with a verdict.",
)
@click.option(
    "--size",
    metavar="SIZE",
    callback=opts.size,
    default="1024",
    show_default=True,
    help="Message size in bytes (512, 4KiB, 1MiB; 4KB = 4000).",
)
@click.option(
    "--metric",
    type=click.Choice(["e2e", "publish"]),
    default="e2e",
    show_default=True,
    help="Which latency the thresholds judge.",
)
@click.option(
    "--max-p50",
    metavar="MS",
    type=click.FloatRange(min=0),
    help="Exit 1 when p50 exceeds this (ms).",
)
@click.option(
    "--max-p99",
    metavar="MS",
    type=click.FloatRange(min=0),
    help="Exit 1 when p99 exceeds this (ms).",
)
@opts.driver_file(
    "driver_file", "Driver YAML with the client settings; the URL's address replaces its own."
)
@click.option(
    "--topic",
    metavar="NAME",
    help="Probe this topic (created if absent, kept afterwards) instead of a temporary one.",
)
@click.option("--json", "as_json", is_flag=True, help="JSON lines: one per second, then a summary.")
@click.option(
    "--slo",
    metavar="EXPR",
    multiple=True,
    callback=lambda ctx, param, texts: parse_all(texts),
    help="A threshold in `run --slo`'s language (repeatable), e.g. e2e.p99.9<50ms.",
)
def probe(
    url: str,
    rate: float,
    duration: float,
    size: int,
    metric: str,
    max_p50: float | None,
    max_p99: float | None,
    driver_file: Path | None,
    topic: str | None,
    as_json: bool,
    slo: tuple[opts.Threshold, ...],
) -> None:
    """Probe the broker at URL (kafka://, amqp://, pulsar://, tcp:// for Pravega) for latency.

    Secured: kafka+ssl://, amqps:// (?cacertfile=...), pulsar+ssl://, tls://; SASL and
    key/trust stores come from a -d driver file.

    Prints publish and end-to-end p50/p99/max every second; exits 1 when a threshold is
    breached, 3 when the broker is unreachable.
    """
    from loadgen.running import probe as probing

    if duration <= 0:
        raise ConfigError(
            "must be positive", path="--duration", value=duration, allowed="a positive duration"
        )
    spec = probing.driver_for_url(url, driver_file)
    settings = probing.ProbeSettings(rate, duration, size, metric, max_p50, max_p99, topic, slo)
    started_ms: list[int] = []

    def on_interval(stats: IntervalStats) -> None:
        started_ms[:] = started_ms or [stats.start_ms]
        record = probing.second_record(stats, (stats.end_ms - started_ms[0]) / 1000)
        click.echo(probing.as_json_line(record) if as_json else probing.format_interval(record))

    if not as_json:
        click.echo(
            f"probing {spec.name} ({spec.kind}): {rate:g} msg/s of {size} B for {duration:g} s",
            err=True,
        )
    with stop.handling():
        verdict = probing.run_probe(spec, settings, on_interval)
    if as_json:
        click.echo(probing.as_json_line(probing.verdict_record(verdict)))
    else:
        click.echo(probing.format_verdict(verdict))
    if verdict.failed:
        sys.exit(1)
