"""Bad input, table-driven: every case exits 2, names what is wrong, prints no traceback, writes
no result and contacts no broker (the memory driver, or addresses nothing listens on).

Each case is files to write (name → text or bytes) and the command line; ``{dir}`` in an
argument is the case's directory. ``expect`` are fragments the error must contain (the field,
the file, the value or what would be allowed).
"""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
MEMORY_DRIVER = (REPO / "configs/drivers/memory.yaml").read_text()
GOOD = """\
name: good
topics: 1
partitionsPerTopic: 1
messageSize: 100
subscriptionsPerTopic: 1
consumerPerSubscription: 1
producersPerTopic: 1
producerRate: 100
testDurationMinutes: 1
"""
KAFKA = """\
name: Kafka
driver: kafka
commonConfig: bootstrap.servers=127.0.0.1:1
producerConfig: |
  acks=all
consumerConfig: |
  auto.offset.reset=earliest
"""
PULSAR = """\
name: Pulsar
driver: pulsar
client:
  serviceUrl: pulsar://127.0.0.1:1
"""
RABBITMQ = """\
name: RabbitMQ
driver: rabbitmq
amqpUris: [amqp://guest:guest@127.0.0.1:1/%2F]
"""


def workload(**changes: object) -> str:
    """GOOD with fields replaced (``None`` removes one)."""
    lines = {line.split(":")[0]: line for line in GOOD.splitlines()}
    for key, value in changes.items():
        if value is None:
            lines.pop(key)
        else:
            lines[key] = f"{key}: {value}"
    return "\n".join(lines.values()) + "\n"


def run_case(workload_text, *flags, driver=MEMORY_DRIVER):
    files = {"w.yaml": workload_text, "d.yaml": driver}
    args = ["run", "-d", "{dir}/d.yaml", "{dir}/w.yaml", "-o", "{dir}/out", *flags]
    return files, args


CASES = {
    # workload files
    "typo-in-field": (*run_case(workload(producerRatee=100)), ["producerRatee", "w.yaml"]),
    "rate-negative": (*run_case(workload(producerRate=-5)), ["producerRate", "-5"]),
    "rate-text": (*run_case(workload(producerRate="fast")), ["producerRate", "fast"]),
    "message-size-zero": (*run_case(workload(messageSize=0)), ["messageSize", "0"]),
    "message-size-10-gib": (
        *run_case(workload(messageSize=10737418240)),
        ["messageSize", "10737418240", "1073741824"],
    ),
    "partitions-zero": (*run_case(workload(partitionsPerTopic=0)), ["partitionsPerTopic"]),
    "partitions-huge": (
        *run_case(workload(partitionsPerTopic=20_000_000)),
        ["partitionsPerTopic", "20000000"],
    ),
    "topics-zero": (*run_case(workload(topics=0)), ["topics", "0"]),
    "duration-negative": (*run_case(workload(testDurationMinutes=-1)), ["testDurationMinutes"]),
    "subscriptions-list": (*run_case(workload(subscriptionsPerTopic="[1, 2]")), ["subscriptions"]),
    "key-distributor-unknown": (
        *run_case(workload(keyDistributor="SOMETIMES")),
        ["keyDistributor", "SOMETIMES", "NO_KEY"],
    ),
    "max-in-flight-zero": (*run_case(workload(producerMaxInFlight=0)), ["producerMaxInFlight"]),
    "payload-file-missing": (
        *run_case(workload(payloadFile="missing.data")),
        ["payloadFile", "missing.data"],
    ),
    "workload-not-utf8": (
        {"w.yaml": b"name: \xff\xfe bad\n", "d.yaml": MEMORY_DRIVER},
        ["run", "-d", "{dir}/d.yaml", "{dir}/w.yaml", "-o", "{dir}/out"],
        ["w.yaml", "UTF-8"],
    ),
    "workload-is-a-list": (*run_case("- 1\n- 2\n"), ["w.yaml", "mapping"]),
    "workload-is-a-scalar": (*run_case("just text\n"), ["w.yaml", "mapping"]),
    "workload-empty": (*run_case(""), ["w.yaml"]),
    "workload-unparseable": (*run_case("name: [unclosed\n\tbad: tab\n"), ["w.yaml", "line"]),
    "workload-missing": (
        {"d.yaml": MEMORY_DRIVER},
        ["run", "-d", "{dir}/d.yaml", "{dir}/nowhere.yaml", "-o", "{dir}/out"],
        ["nowhere.yaml"],
    ),
    "workload-is-a-directory": (
        {"d.yaml": MEMORY_DRIVER, "sub/keep": ""},
        ["run", "-d", "{dir}/d.yaml", "{dir}/sub", "-o", "{dir}/out"],
        ["sub"],
    ),
    # driver files
    "driver-unknown": (*run_case(GOOD, driver="name: X\ndriver: mqtt\n"), ["driver", "mqtt"]),
    "driver-class-unknown": (
        *run_case(GOOD, driver="name: X\ndriverClass: io.example.NoSuchDriver\n"),
        ["driverClass", "io.example.NoSuchDriver"],
    ),
    "driver-typo": (
        *run_case(GOOD, driver=MEMORY_DRIVER + "pollIntervallMs: 1\n"),
        ["pollIntervallMs", "d.yaml"],
    ),
    "kafka-config-line-without-equals": (
        *run_case(GOOD, driver=KAFKA.replace("acks=all", "acks all")),
        ["producerConfig", "acks all"],
    ),
    "kafka-unknown-librdkafka-property": (
        *run_case(GOOD, driver=KAFKA.replace("acks=all", "acks=all\n  lingerr.ms=5")),
        ["lingerr.ms"],
    ),
    "pulsar-subscription-type": (
        *run_case(GOOD, driver=PULSAR + "consumer:\n  subscriptionType: Shard\n"),
        ["subscriptionType", "Shard", "Key_Shared"],
    ),
    "pulsar-service-url-scheme": (
        *run_case(GOOD, driver=PULSAR.replace("pulsar://", "http://")),
        ["serviceUrl"],
    ),
    "rabbitmq-queue-type": (
        *run_case(GOOD, driver=RABBITMQ + "queueType: LAZY\n"),
        ["queueType", "LAZY", "QUORUM"],
    ),
    "rabbitmq-uri-scheme": (
        *run_case(GOOD, driver=RABBITMQ.replace("amqp://", "http://")),
        ["amqpUris[0]"],
    ),
    "rabbitmq-negative-prefetch": (
        *run_case(GOOD, driver=RABBITMQ + "prefetch: -1\n"),
        ["prefetch", "-1"],
    ),
    # command-line values
    "duration-unit": (*run_case(GOOD, "--duration", "5x"), ["--duration", "5x"]),
    "duration-negative-flag": (*run_case(GOOD, "--duration", "-3"), ["--duration"]),
    "stats-interval-too-short": (
        *run_case(GOOD, "--stats-interval", "0.2"),
        ["--stats-interval"],
    ),
    "processes-zero": (*run_case(GOOD, "--processes", "0"), ["--processes", "0"]),
    "processes-and-workers": (
        *run_case(GOOD, "--processes", "2", "--workers", "http://127.0.0.1:1"),
        ["--processes", "--workers"],
    ),
    "out-is-a-regular-file": (
        {"w.yaml": GOOD, "d.yaml": MEMORY_DRIVER, "out": "a file\n"},
        ["run", "-d", "{dir}/d.yaml", "{dir}/w.yaml", "-o", "{dir}/out"],
        ["-o", "out", "is a regular file"],
    ),
    "two-display-modes": (*run_case(GOOD, "--plain", "--json-lines"), ["--plain", "--json-lines"]),
    "unknown-flag": (*run_case(GOOD, "--rat", "5"), ["--rat"]),
    "sweep-bad-rates": (
        {"w.yaml": GOOD, "d.yaml": MEMORY_DRIVER},
        ["sweep", "-d", "{dir}/d.yaml", "{dir}/w.yaml", "--rates", "100,lots", "-o", "{dir}/out"],
        ["--rates", "lots"],
    ),
    "matrix-unknown-field": (
        {
            "w.yaml": GOOD,
            "d.yaml": MEMORY_DRIVER,
            "plan.yaml": "workload: w.yaml\ndrivers: [d.yaml]\nmatrix:\n  producerRat: [1, 2]\n",
        },
        ["matrix", "{dir}/plan.yaml", "-o", "{dir}/out"],
        ["producerRat", "plan.yaml"],
    ),
    "probe-unknown-scheme": ({}, ["probe", "mqtt://127.0.0.1:1"], ["mqtt", "kafka://"]),
    "compare-not-json": (
        {"a.json": "not json", "b.json": "{}"},
        ["compare", "{dir}/a.json", "{dir}/b.json"],
        ["a.json"],
    ),
    "report-not-a-result": (
        {"r.json": '{"hello": 1}'},
        ["report", "{dir}/r.json", "-o", "{dir}/out/r.html"],
        ["r.json"],
    ),
    "validate-typo": ({"w.yaml": workload(topicz=1)}, ["validate", "{dir}/w.yaml"], ["topicz"]),
}


def write(directory: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_bad_input_exits_2_naming_what_is_wrong(tmp_path, case):
    files, args, expect = CASES[case]
    write(tmp_path, files)
    argv = [arg.replace("{dir}", str(tmp_path)) for arg in args]
    done = subprocess.run(
        [sys.executable, "-m", "loadgen", *argv], capture_output=True, text=True, timeout=60
    )
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "Traceback" not in output
    for fragment in expect:
        assert fragment in output, f"{fragment!r} not in: {output}"
    out = tmp_path / "out"
    assert not out.exists() or not list(out.glob("**/*.json")), "a result was written"
