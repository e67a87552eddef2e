"""The ``loadgen`` command: the group its commands join, one module each. Errors map to exit
codes here and nowhere else (see loadgen.base.errors)."""

from __future__ import annotations

import logging
import sys

import click

import loadgen.base.version
from loadgen.base.errors import LoadgenError, exit_code_for
from loadgen.cli.brokers import brokers
from loadgen.cli.env import read_from_environment
from loadgen.cli.files import compare, recover, report, validate
from loadgen.cli.pipeline import pipeline
from loadgen.cli.probe import probe
from loadgen.cli.run import run
from loadgen.cli.studies import calibrate, matrix_command, sweep_command
from loadgen.cli.worker import worker
from loadgen.running import stop


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(loadgen.base.version.__version__, prog_name="loadgen")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
def cli(verbose: int) -> None:
    """Load generation for message brokers, OMB-compatible in and out."""
    level = [logging.WARNING, logging.INFO, logging.DEBUG][min(verbose, 2)]
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


for command in (
    run,
    sweep_command,
    matrix_command,
    calibrate,
    probe,
    validate,
    compare,
    report,
    recover,
    brokers,
    worker,
    pipeline,
):
    cli.add_command(command)
# LOADGEN_<OPTION> for every option of these (after all are declared, so none is missed)
read_from_environment(run, sweep_command, matrix_command, probe, worker)


def main() -> None:
    """Console-script entry point: run the CLI and turn errors into exit codes; after a signal,
    exit without the interpreter's finalizers (:func:`loadgen.running.stop.exit_at_once`)."""
    try:
        _main()
    except SystemExit as ending:
        code = ending.code
        if stop.WATCH.stop is not None:
            stop.exit_at_once(code if isinstance(code, int) else int(code is not None))
        raise
    if stop.WATCH.stop is not None:
        stop.exit_at_once(0)


def _main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except LoadgenError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(exit_code_for(error))
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
