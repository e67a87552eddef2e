"""What the Spark job's executor tasks run: landing bytes parsed, one (run, metric) merged.

These modules travel to the executors in a zip the job adds to its session
(:mod:`loadgen.pipeline.ship`), so they import only the standard library, numpy, pyarrow,
:mod:`loadgen.base.hdr_core` and each other: an executor needs no loadgen installed (a unit test
holds every module here to that).
"""
