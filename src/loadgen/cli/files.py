"""``loadgen validate``, ``compare``, ``report`` and ``recover``: commands on files, which start
no run."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from loadgen.base.files import write_json_atomic
from loadgen.base.writable import check_outputs
from loadgen.cli.options import Decorator
from loadgen.driver_api.validation import validate_file


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--lenient", is_flag=True, help="Ignore unknown keys with a warning.")
def validate(files: tuple[Path, ...], lenient: bool) -> None:
    """Check workload and driver files; exit 2 at the first bad one."""
    for path in files:
        kind = validate_file(path, lenient=lenient)
        click.echo(f"ok  {kind:8} {path}")


@click.command()
@click.argument("baseline", type=click.Path(path_type=Path))
@click.argument("new", type=click.Path(path_type=Path))
@click.option(
    "--max-regression",
    default="10%",
    show_default=True,
    help="How much worse a metric may get before it counts as a regression.",
)
def compare(baseline: Path, new: Path, max_regression: str) -> None:
    """Compare a result with a baseline; exit 1 when a metric regressed.

    Either may be a result JSON or the .journal a killed run left. Faults made in the runs are
    lined up by order and shown, never gated."""
    from loadgen.result_files import compare as comparing

    allowed = comparing.parse_fraction(max_regression)
    before, after = comparing.load_result(baseline), comparing.load_result(new)
    click.echo(f"baseline: {comparing.describe(before)}\nnew:      {comparing.describe(after)}")
    if comparing.describe(before) != comparing.describe(after):
        click.echo("note: the two results come from different workloads or drivers", err=True)
    rows = comparing.compare(before, after)
    click.echo(comparing.format_table(rows, allowed))
    faults = comparing.format_faults(before, after)
    if faults is not None:
        click.echo(f"\n{faults}")
    regressed = [row.metric for row in rows if row.regressed(allowed)]
    if regressed:
        click.echo(f"regression beyond {max_regression}: {', '.join(regressed)}", err=True)
        sys.exit(1)


def _out_file(help_text: str) -> Decorator:
    """``-o/--out FILE`` (default: ``None``, the command picks a name)."""
    return click.option(
        "-o", "--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help=help_text
    )


@click.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@_out_file("HTML file to write (default: <result>.html beside one result, ./report.html for more).")
@click.option(
    "--images",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Also write each chart as an image file into this directory (for slides).",
)
@click.option(
    "--format",
    "image_format",
    type=click.Choice(["png", "svg"]),
    default="png",
    show_default=True,
    help="Image format for --images.",
)
def report(
    results: tuple[Path, ...], out: Path | None, images: Path | None, image_format: str
) -> None:
    """Write an offline HTML report of one RESULT, or compare several side by side.

    A RESULT is a result JSON or the .journal a killed run left."""
    from loadgen.report import html  # matplotlib: imported only when a report is written

    if out is None:
        out = results[0].with_suffix(".html") if len(results) == 1 else Path("report.html")
    check_outputs({"-o/--out": out.parent, "--images": images})
    click.echo(html.write_report(results, out))
    if images is not None:
        for path in html.export_charts(results, images, image_format):
            click.echo(path)


@click.command()
@click.argument("journal", type=click.Path(dir_okay=False, path_type=Path))
@_out_file("Result JSON to write (default: <stem>.json beside the journal).")
def recover(journal: Path, out: Path | None) -> None:
    """Write the result of a run that died (killed, crashed) from the JOURNAL it left.

    The result says "incomplete": true, "stopReason": "unfinished"; report and compare also
    read the journal itself."""
    from loadgen.formats.journal import result_from_journal

    target = out or journal.with_suffix(".json")
    check_outputs({"-o/--out": target.parent})
    write_json_atomic(target, result_from_journal(journal))
    click.echo(target)
