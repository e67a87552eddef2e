"""The ``loadgen`` command line: the group and its exit codes (:mod:`.main`), one module per
command or family of commands, their shared options, and the environment variables that set them."""
