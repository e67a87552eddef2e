"""Pulsar brokers on 127.0.0.1: pulsar-lite and its TLS + token front."""
