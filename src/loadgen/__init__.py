"""loadgen: load generation for message brokers, OMB-compatible in and out.

From Python::

    import loadgen

    result = loadgen.run("workload.yaml", loadgen.driver("kafka", commonConfig=..., ...))
    loadgen.assert_slo(result, "e2e.p99<=5ms", "publishRate>=9900")
"""

from loadgen.api import arun, driver, run, workload
from loadgen.base.version import __version__
from loadgen.running.result import Latency, Result
from loadgen.running.slo import assert_slo

__all__ = ["Latency", "Result", "__version__", "arun", "assert_slo", "driver", "run", "workload"]
