"""Redis on 127.0.0.1: Debian's redis-server in a folder of its own."""
