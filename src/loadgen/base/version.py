"""The version loadgen reports in results, worker handshakes and ``--version``."""

__version__ = "0.1.0"
