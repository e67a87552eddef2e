"""NATS on 127.0.0.1: nats-server with JetStream, its store in a folder of its own."""
