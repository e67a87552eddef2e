"""``python -m loadgen`` runs the CLI."""

from loadgen.cli.main import main

main()
