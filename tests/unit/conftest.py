"""Shared unit-test fixtures: Java HdrHistogram as the reference our histograms, percentiles and
logs are checked against, and one interval snapshot for the console and display tests."""

import shutil
import subprocess
from pathlib import Path

import pytest

from loadgen.base import hdr
from loadgen.engine import burst as bursts
from loadgen.engine import recorder as recorders
from loadgen.engine.stats import END_TO_END, PUBLISH, IntervalStats

JAR = Path("/usr/share/java/hdrhistogram.jar")
JAVA_SOURCE = Path(__file__).resolve().parents[1] / "java" / "HdrCheck.java"


class JavaHdr:
    """Runs tests/java/HdrCheck.java (compiled once) and reads its reports."""

    def __init__(self, build: Path) -> None:
        self.build = build

    def run(self, *args: str, stdin: str = "") -> str:
        done = subprocess.run(
            ["java", "-cp", f"{JAR}:{self.build}", "HdrCheck", *args],
            input=stdin,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        return done.stdout

    def reports(self, *args: str, stdin: str = "") -> list[dict]:
        return self.parse(self.run(*args, stdin=stdin))

    @staticmethod
    def parse(text: str) -> list[dict]:
        reports, current = [], None
        for line in text.splitlines():
            kind, _, rest = line.partition(" ")
            if kind == "end":
                reports.append(current)
                current = None
                continue
            if current is None:
                current = {"pct": {}, "q": {}}
            if kind == "interval":
                current["interval"] = tuple(int(part) for part in rest.split())
            elif kind in ("total", "min", "max"):
                current[kind] = int(rest)
            elif kind == "mean":
                current["mean"] = float(rest)
            elif kind in ("pct", "q"):
                p, value = rest.split()
                current[kind][float(p)] = int(value)
        return reports

    @staticmethod
    def assert_equal(histogram: hdr.Histogram, java: dict) -> None:
        assert histogram.total == java["total"]
        assert histogram.max == java["max"]
        assert histogram.min == java["min"]
        assert hdr.mean(histogram) == java["mean"]
        assert hdr.summary(histogram).min == java["min"]
        for p, value in java["pct"].items():
            assert hdr.value_at_percentile(histogram, p) == value, p
        ours = {float(k): v for k, v in hdr.quantile_map(histogram).items()}
        assert ours == java["q"]


@pytest.fixture(scope="session")
def java_hdr(tmp_path_factory):
    """HdrCheck compiled once per session into a temporary directory; skips without Java."""
    if not (JAR.exists() and shutil.which("javac") and shutil.which("java")):
        pytest.skip(
            "Java HdrHistogram missing: apt-get install -y libhdrhistogram-java (and a JDK)"
        )
    build = tmp_path_factory.mktemp("java")
    subprocess.run(["javac", "-cp", str(JAR), "-d", str(build), str(JAVA_SOURCE)], check=True)
    return JavaHdr(build)


@pytest.fixture
def make_interval():
    """A 2-s interval: 20k sent, 19k received (1 KiB), 3 errors, publish 1.5 ms, e2e 4 ms."""

    def make(*, warmup: bool = False) -> IntervalStats:
        return IntervalStats(
            start_ms=1_000,
            end_ms=3_000,
            sent=20_000,
            received=19_000,
            bytes_sent=20_000 * 1024,
            bytes_received=19_000 * 1024,
            send_errors=3,
            warmup=warmup,
            histograms={
                PUBLISH: hdr.record_ns(PUBLISH, [1_500_000] * 100),
                END_TO_END: hdr.record_ns(END_TO_END, [4_000_000] * 100),
            },
        )

    return make


def _engines(python: type, compiled: type) -> list[type]:
    """The recorder classes of each engine this install has (C only where it was built)."""
    return [python, compiled] if recorders._hotpath is not None else [python]


@pytest.fixture(
    params=_engines(recorders.PythonProducerRecorder, recorders.CompiledProducerRecorder),
    ids=lambda kind: kind.__name__,
)
def producer_recorder(request) -> type:
    """A producer recorder class, once per engine."""
    return request.param


@pytest.fixture(
    params=_engines(recorders.PythonConsumerRecorder, recorders.CompiledConsumerRecorder),
    ids=lambda kind: kind.__name__,
)
def consumer_recorder(request) -> type:
    """A consumer recorder class, once per engine."""
    return request.param


@pytest.fixture(params=["python", "c"] if bursts._burst is not None else ["python"])
def burst_engine(request, monkeypatch) -> str:
    """The producer loop's burst, once per engine: ``c`` (``loadgen.engine._burst``, where it was
    built)
    or ``python`` (each message through the producer's ``send``)."""
    monkeypatch.setattr(bursts, "COMPILED", request.param == "c")
    return request.param
