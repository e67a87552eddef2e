"""Files the CLI wrote elsewhere than asked (a full or failing disk): what the console says and
the exit code that tells a script (see :mod:`loadgen.result_files.destination`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from loadgen.base.errors import EXIT_FALLBACK, NoPlaceLeft
from loadgen.cli.options import Output
from loadgen.result_files.destination import Destination

T = TypeVar("T")


def displaced(record: dict[str, Any] | None, output: Output) -> None:
    """Say where files went when not where asked (``run.output``'s record), and keep it for
    the exit code."""
    if record is None:
        return
    output.displaced.append(record)
    if record["writtenTo"] is None:
        click.echo(
            f"error: nothing could be written in {record['asked']} ({record['reason']}) nor in "
            "any fallback directory",
            err=True,
        )
    else:
        click.echo(
            f"warning: written to {record['writtenTo']}, not {record['asked']} "
            f"({record['reason']})",
            err=True,
        )


def write_displaced(asked: Path, write: Callable[[Path], T], output: Output) -> T:
    """``write(directory)`` in ``asked``, or in a fallback directory when that disk fails."""
    destination = Destination(asked)
    try:
        return destination.write(write)
    finally:
        displaced(destination.record(), output)


def displaced_exit_code(records: list[dict[str, Any]]) -> int:
    """6 when a file went nowhere (a result printed instead), else 5: files in a fallback."""
    if any(record["writtenTo"] is None for record in records):
        return NoPlaceLeft.exit_code
    return EXIT_FALLBACK
