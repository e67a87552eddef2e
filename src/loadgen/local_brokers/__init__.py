"""Brokers on 127.0.0.1 that ``loadgen brokers`` and the pytest plugin start: one launcher
(:mod:`.launch`), the catalogue of local brokers drivers declare, and the brokers themselves."""
