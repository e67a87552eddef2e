"""Local brokers for development and tests (127.0.0.1 only)."""
