"""Kafka brokers on 127.0.0.1: tansu (the embedded default) and its TLS + SASL front."""
