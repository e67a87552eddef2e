"""Runs over several worker processes, local (``--processes``) or remote (``--workers``).

A worker serves its :class:`~loadgen.engine.local_worker.LocalWorker` over HTTP (:mod:`.server`);
the
coordinator splits the producers and consumers over the workers (:mod:`.split`), drives them
together (:mod:`.ensemble`) and merges their interval stats exactly.
"""
