"""``python -m loadgen`` runs the CLI."""

from loadgen.cli import main

main()
