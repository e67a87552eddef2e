"""The probe's URL → driver config mapping and its verdict, without a broker."""

import pytest

from loadgen.base import hdr
from loadgen.base.errors import ConfigError
from loadgen.engine.outcome import RunOutcome
from loadgen.engine.stats import END_TO_END, PUBLISH, IntervalStats
from loadgen.running.probe import ProbeSettings, _verdict, driver_for_url, probe_workload


def test_kafka_url_gets_the_default_port_for_each_host_and_skips_the_group_join():
    spec = driver_for_url("kafka://a.example,b.example:9093")
    assert spec.kind == "kafka"
    assert "bootstrap.servers=a.example:9092,b.example:9093" in spec.config["commonConfig"]
    assert spec.config["consumerConfig"]["auto.offset.reset"] == "latest"
    assert spec.config["consumerAssignment"] == "assign"
    assert spec.config["producerConfig"]["acks"] == "all"


def test_a_driver_file_supplies_settings_and_the_url_replaces_its_address(tmp_path):
    path = tmp_path / "kafka.yaml"
    path.write_text(
        "name: Tuned\ndriver: kafka\ncommonConfig: |\n  bootstrap.servers=elsewhere:1\n"
        "  client.id=x\nproducerConfig: linger.ms=5\nconsumerConfig: fetch.wait.max.ms=5\n"
    )
    spec = driver_for_url("kafka://127.0.0.1:19092", path)
    assert spec.name == "Tuned"
    common = spec.config["commonConfig"].splitlines()
    # the URL's address comes last, so it wins when the properties are parsed
    assert common[-1] == "bootstrap.servers=127.0.0.1:19092"
    assert spec.config["consumerConfig"].splitlines() == [
        "fetch.wait.max.ms=5",
        "auto.offset.reset=latest",
    ]
    assert spec.config["consumerAssignment"] == "assign"


def test_a_driver_file_may_keep_group_subscriptions(tmp_path):
    path = tmp_path / "kafka.yaml"
    path.write_text(
        "name: K\ndriver: kafka\ncommonConfig: {}\nproducerConfig: {}\nconsumerConfig: {}\n"
        "consumerAssignment: subscribe\n"
    )
    spec = driver_for_url("kafka://h:1", path)
    assert spec.config["consumerAssignment"] == "subscribe"
    assert spec.config["commonConfig"] == {"bootstrap.servers": "h:1"}


def test_amqp_url_is_the_rabbitmq_uri_as_given():
    spec = driver_for_url("amqp://user:pw@127.0.0.1:5672/%2F")
    assert (spec.kind, spec.config["amqpUris"]) == (
        "rabbitmq",
        ["amqp://user:pw@127.0.0.1:5672/%2F"],
    )


@pytest.mark.parametrize("url", ["http://h:1", "127.0.0.1:9092", ""])
def test_anything_but_a_broker_url_is_bad_input_listing_the_schemes(url):
    with pytest.raises(ConfigError) as caught:
        driver_for_url(url)
    assert caught.value.exit_code == 2
    assert "kafka://host:port" in str(caught.value)
    assert "amqp://host:port" in str(caught.value)


@pytest.mark.parametrize("url", ["kafka://", "amqps://", "pulsar://", "tls://"])
def test_a_broker_url_without_an_address_is_bad_input_showing_its_form(url):
    with pytest.raises(ConfigError, match="not a broker URL") as caught:
        driver_for_url(url)
    assert caught.value.exit_code == 2
    assert f"{url}host:port" in str(caught.value)


def test_a_driver_file_of_another_broker_is_bad_input(tmp_path):
    path = tmp_path / "rabbit.yaml"
    path.write_text("name: R\ndriver: rabbitmq\namqpUris: [amqp://127.0.0.1]\n")
    with pytest.raises(ConfigError, match=r"rabbit\.yaml: driver: kafka:// URLs need a kafka"):
        driver_for_url("kafka://h:1", path)


def test_the_probe_workload_is_one_partition_at_the_asked_rate():
    workload = probe_workload(ProbeSettings(rate=250, duration_s=30, message_size=64))
    assert (workload.topics, workload.partitions_per_topic, workload.producer_rate) == (1, 1, 250)
    assert (workload.message_size, workload.test_duration_s, workload.warmup_duration_s) == (
        64,
        30,
        0,
    )


def _interval(e2e_ms: list[float], publish_ms: list[float]) -> IntervalStats:
    return IntervalStats(
        start_ms=0,
        end_ms=1000,
        sent=len(publish_ms),
        received=len(e2e_ms),
        histograms={
            END_TO_END: hdr.record_ns(END_TO_END, [int(v * 1e6) for v in e2e_ms]),
            PUBLISH: hdr.record_ns(PUBLISH, [int(v * 1e6) for v in publish_ms]),
        },
    )


def test_the_verdict_judges_the_chosen_metric_over_all_intervals():
    outcome = RunOutcome(intervals=[_interval([1.0] * 98, [0.5] * 98), _interval([9.0] * 2, [])])
    e2e = _verdict(outcome, ProbeSettings(max_p99_ms=5.0, max_p50_ms=2.0))
    assert e2e.breaches == ["e2e.p99<=5.0ms: measured 9 ms"]
    assert e2e.failed and (e2e.sent, e2e.received) == (98, 100)
    publish = _verdict(outcome, ProbeSettings(metric="publish", max_p99_ms=1.0))
    assert publish.breaches == [] and not publish.failed


def test_nothing_measured_is_a_breach_and_an_interrupt_alone_is_not_a_failure():
    empty = _verdict(RunOutcome(), ProbeSettings(max_p99_ms=5.0))
    assert empty.breaches == ["e2e.p99<=5.0ms: not measured"]
    interrupted = RunOutcome(
        intervals=[_interval([1.0], [1.0])], incomplete=True, stop_reason="interrupted"
    )
    verdict = _verdict(interrupted, ProbeSettings(max_p99_ms=5.0))
    assert verdict.stopped == "interrupted" and not verdict.failed
    broken = RunOutcome(incomplete=True, stop_reason="error", stop_detail="connection lost")
    assert _verdict(broken, ProbeSettings()).stopped == "error: connection lost"
    assert _verdict(broken, ProbeSettings()).failed


def test_a_kafka_ssl_url_turns_tls_on_and_keeps_a_driver_files_sasl_ssl(tmp_path):
    spec = driver_for_url("kafka+ssl://broker.example:9093")
    assert spec.kind == "kafka"
    assert "bootstrap.servers=broker.example:9093" in spec.config["commonConfig"]
    assert "security.protocol=SSL" in spec.config["commonConfig"]
    path = tmp_path / "sasl.yaml"
    path.write_text(
        "name: K\ndriver: kafka\ncommonConfig: |\n  bootstrap.servers=old:1\n"
        "  security.protocol=SASL_SSL\n  sasl.mechanism=SCRAM-SHA-512\n"
        "producerConfig: {}\nconsumerConfig: {}\n"
    )
    common = driver_for_url("kafka+ssl://h:9093", path).config["commonConfig"]
    assert "security.protocol=SASL_SSL" in common and "security.protocol=SSL\n" not in common
    assert "sasl.mechanism=SCRAM-SHA-512" in common and "bootstrap.servers=h:9093" in common
    plain = path.read_text().replace("SASL_SSL", "PLAINTEXT")
    path.write_text(plain)
    common = driver_for_url("kafka+ssl://h:9093", path).config["commonConfig"]
    assert common.rstrip().endswith("security.protocol=SSL")
