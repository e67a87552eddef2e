"""``loadgen pipeline ingest | query | close``: the Spark side of the pipeline, as commands."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import click

from loadgen.base.writable import check_outputs
from loadgen.engine.stats import END_TO_END, METRICS
from loadgen.pipeline.hadoop_fs import is_uri
from loadgen.pipeline.spark import DEFAULT_MASTER, parse_conf
from loadgen.spec import parse_duration

_master = click.option(
    "--master",
    default=DEFAULT_MASTER,
    show_default=True,
    help="Spark master URL: local[N], spark://host:7077, yarn, k8s://... .",
)
_conf = click.option(
    "--conf",
    "conf",
    multiple=True,
    metavar="KEY=VALUE",
    help="Any Spark setting, applied last (repeatable).",
)


@click.group()
def pipeline() -> None:
    """Per-interval histograms into Spark: ingest landing files, query the tables."""
    logging.getLogger("loadgen.pipeline").setLevel(logging.INFO)
    logging.getLogger("py4j").setLevel(logging.WARNING)


def location(value: str, option: str) -> str:
    """A local directory (checked now, created if absent: exit 2 if it cannot take files) as an
    absolute path, or a URI of another file system (``hdfs://``, ``s3a://``...) as given."""
    if is_uri(value):
        return value
    directory = Path(value).resolve()
    check_outputs({option: directory})  # before Spark starts: that alone takes seconds
    return str(directory)


@pipeline.command()
@click.argument("landing")
@click.option(
    "--out",
    required=True,
    help="Where the tables (and the job's checkpoint and state) live: a directory or a URI.",
)
@_master
@click.option("--once", is_flag=True, help="Ingest what is there now, then stop (after a run).")
@click.option(
    "--trigger",
    default="5s",
    show_default=True,
    help="How often the live job looks for new files (its CPU cost falls as this grows).",
)
@click.option(
    "--keep-landing", is_flag=True, help="Leave processed files in LANDING (else moved to OUT)."
)
@click.option(
    "--max-files",
    type=click.IntRange(min=1),
    help="At most this many landing files per micro-batch (a backfill in bounded steps).",
)
@_conf
def ingest(
    landing: str,
    out: str,
    master: str,
    once: bool,
    trigger: str,
    keep_landing: bool,
    max_files: int | None,
    conf: tuple[str, ...],
) -> None:
    """Merge the landing files of LANDING into the intervals/runs/quarantine tables in OUT.

    LANDING and OUT are directories or URIs of any file system Spark reads and writes. Live
    until Ctrl-C unless --once; restart on the same OUT to resume exactly where it stopped.
    """
    from loadgen.pipeline.ingest import IngestSettings, run_ingest

    settings = IngestSettings(
        landing=location(landing, "LANDING"),
        out=location(out, "--out"),
        master=master,
        once=once,
        trigger_s=parse_duration(trigger, option="--trigger"),
        keep_landing=keep_landing,
        max_files=max_files,
        conf=tuple(parse_conf(conf).items()),
    )
    run_ingest(settings)


@pipeline.command()
@click.argument("tables")
@click.argument("sql", required=False)
@click.option(
    "--report",
    type=click.Choice(["runs", "timeline"]),
    help="A ready report: every run compared, or one run's intervals (--run).",
)
@click.option("--run", "run_id", help="The run of the timeline report.")
@click.option(
    "--metric",
    type=click.Choice(METRICS),
    default=END_TO_END,
    show_default=True,
    help="The latency the reports show.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per row.")
@_master
@_conf
def query(
    tables: str,
    sql: str | None,
    report: str | None,
    run_id: str | None,
    metric: str,
    as_json: bool,
    master: str,
    conf: tuple[str, ...],
) -> None:
    """Run SQL (or a --report) over the tables in TABLES: views intervals, runs, quarantine.

    TABLES is the --out of `pipeline ingest` (a directory or a URI). Each view has the
    partition columns day (UTC, e.g. WHERE day >= date_sub(current_date(), 7)) and batch.
    """
    from loadgen.base.errors import ConfigError
    from loadgen.pipeline.query import check_tables, register_tables, report_sql, run_sql
    from loadgen.pipeline.spark import start_session

    if (sql is None) == (report is None):
        raise ConfigError(
            "give either SQL or --report", path="SQL", value=sql, allowed="SQL or --report"
        )
    statement, args = (sql, {}) if report is None else report_sql(report, run_id, metric)
    settings = parse_conf(conf)
    tables = tables if is_uri(tables) else str(Path(tables).resolve())
    check_tables(tables)
    spark = start_session(master, "loadgen pipeline query", settings)
    try:
        register_tables(spark, tables)
        frame = run_sql(spark, statement, args)
        _show(frame.columns, [row.asDict() for row in frame.collect()], as_json)
    finally:
        spark.stop()


def _show(columns: list[str], rows: list[dict], as_json: bool) -> None:
    if as_json:
        for row in rows:
            click.echo(json.dumps(row, default=str))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(*columns, box=None, pad_edge=False)
    for row in rows:
        table.add_row(*("" if row[c] is None else str(row[c]) for c in columns))
    Console(file=sys.stdout, width=max(80, 14 * len(columns))).print(table)
    click.echo(f"({len(rows)} rows)", err=True)


@pipeline.command()
@click.argument("landing", type=click.Path(file_okay=False, path_type=Path))
@click.argument("run_id")
@click.option("--reason", default="closed by hand", show_default=True, help="Why, for the tables.")
def close(landing: Path, run_id: str, reason: str) -> None:
    """Finalise RUN_ID (as incomplete) when a worker died and will never land its end marker."""
    from loadgen.pipeline.landing import close_run

    path = close_run(landing, run_id, reason)
    click.echo(f"close marker for {run_id}: {path}")
