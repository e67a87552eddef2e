"""The ``loadgen`` command line: the commands (:mod:`.main`), their shared options, the
environment variables that set them, and the pipeline's commands."""
