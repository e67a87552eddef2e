"""Runs over several worker processes: on this host (``--processes``) or others (``--workers``).

A worker serves its :class:`~loadgen.worker.local.LocalWorker` over HTTP (:mod:`.server`); the
coordinator splits the producers and consumers over the workers (:mod:`.split`), drives them
together (:mod:`.ensemble`) and merges their interval stats exactly.
"""
