"""loadgen: load generation for message brokers, OMB-compatible in and out."""

__version__ = "0.1.0"
