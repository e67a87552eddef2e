"""Micro-benchmarks of the per-message path (pytest-benchmark): python -m pytest bench/ -q

Not part of the test suite (testpaths = tests); numbers go to bench/results/memory-and-engine.md.
"""

from time import perf_counter_ns

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from loadgen.base import hdr
from loadgen.driver_api import TopicSpec
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine import recorder as recorders
from loadgen_drivers.memory import Driver

VALUES_NS = (np.random.default_rng(1).lognormal(7.6, 1.0, 100_000) * 1000).astype(np.int64)


def test_bin_100k_values_with_numpy(benchmark):
    histogram = benchmark(hdr.record_ns, "publish", VALUES_NS)
    assert histogram.total == len(VALUES_NS)


def test_bin_100k_values_with_record_value(benchmark):
    micros = (VALUES_NS // 1000).tolist()

    def record_each():
        histogram = HdrHistogram(1, 60_000_000, 5)
        for value in micros:
            histogram.record_value(value)
        return histogram

    histogram = benchmark.pedantic(record_each, rounds=3, iterations=1)
    assert histogram.total_count == len(VALUES_NS)


@pytest.fixture
def producer():
    driver = Driver.from_config(DriverSpec(name="m", kind="memory"))
    driver.create_topics([TopicSpec("t", 16)])
    return driver.create_producer("t")


ENGINES = [recorders.PythonProducerRecorder]
if recorders._hotpath is not None:
    ENGINES.append(recorders.CompiledProducerRecorder)


@pytest.mark.parametrize("engine", ENGINES, ids=lambda kind: kind.__name__)
def test_one_message_through_the_engine_path(benchmark, producer, engine):
    """What the producer loop does per message: clock, message id, the acknowledgement bound
    (the publish delay recorded with it), send with id and intended time, ack record; on each
    recorder engine."""
    recorder = engine()
    bind, payload = recorder.bind, bytes(1024)
    sends, bases, n_sends, to_wall = [producer.send], [0], 1, 10**18

    def one_thousand():
        for index in range(1000):
            now = perf_counter_ns()
            which = index % n_sends
            message_id = bases[which] + index // n_sends
            sends[which](None, payload, bind(message_id, index, now), message_id, index + to_wall)

    benchmark(one_thousand)
    assert recorder.acked_count > 0
