"""Workload files: OMB's fields and defaults, and every check OMB never made, naming the field."""

import logging
from pathlib import Path

import pytest

from loadgen.base.errors import ConfigError
from loadgen.driver_api.validation import validate_file
from loadgen.spec import KeyDistributor, load_workload, resolve_payload_file

REPO = Path(__file__).resolve().parents[2]

GOOD = {
    "name": "w",
    "topics": "1",
    "partitionsPerTopic": "4",
    "messageSize": "100",
    "subscriptionsPerTopic": "2",
    "consumerPerSubscription": "3",
    "producersPerTopic": "5",
    "producerRate": "1000",
    "testDurationMinutes": "1",
}


def write_workload(tmp_path, *, drop=(), name="w.yaml", **changes):
    fields = {key: value for key, value in GOOD.items() if key not in drop} | changes
    path = tmp_path / name
    path.write_text("".join(f"{key}: {value}\n" for key, value in fields.items()))
    return path


def error_for(path, **kwargs):
    with pytest.raises(ConfigError) as caught:
        load_workload(path, **kwargs)
    assert caught.value.exit_code == 2
    assert caught.value.file == str(path)
    return caught.value


def test_omb_defaults_apply_to_fields_left_out(tmp_path):
    workload = load_workload(write_workload(tmp_path))
    assert workload.key_distributor is KeyDistributor.NO_KEY
    assert workload.use_randomized_payloads is False
    assert workload.payload_file is None
    assert workload.consumer_backlog_size_gb == 0
    assert workload.backlog_drain_ratio == 1.0
    assert workload.warmup_duration_s == 60


def test_derived_counts_and_durations(tmp_path):
    path = write_workload(tmp_path, topics=2, testDurationMinutes=0.5, warmupDurationMinutes=0.25)
    workload = load_workload(path)
    assert workload.total_producers == 2 * 5
    assert workload.total_consumers == 2 * 2 * 3
    assert workload.test_duration_s == 30
    assert workload.warmup_duration_s == 15
    assert not workload.is_rate_discovery


@pytest.mark.parametrize("rate", ["0", "-1"])
def test_producer_rate_zero_or_minus_one_means_rate_discovery(tmp_path, rate):
    assert load_workload(write_workload(tmp_path, producerRate=rate)).is_rate_discovery


def test_fractional_rate_and_backlog_are_accepted(tmp_path):
    path = write_workload(tmp_path, producerRate="2.5", consumerBacklogSizeGB="0.25")
    workload = load_workload(path)
    assert (workload.producer_rate, workload.consumer_backlog_size_gb) == (2.5, 0.25)


def test_misspelt_field_names_file_field_and_the_nearest_valid_key(tmp_path):
    path = write_workload(tmp_path, drop=["partitionsPerTopic"], partitionPerTopic=4)
    error = error_for(path)
    assert error.path == "partitionPerTopic"
    assert "unknown field 'partitionPerTopic' (did you mean 'partitionsPerTopic'?)" in str(error)
    assert "messageSize" in error.allowed and "partitionsPerTopic" in error.allowed


def test_lenient_ignores_unknown_fields_with_a_warning_naming_file_and_key(tmp_path, caplog):
    path = write_workload(tmp_path, someFutureField=3)
    with caplog.at_level(logging.WARNING, logger="loadgen.spec"):
        workload = load_workload(path, lenient=True)
    assert workload.partitions_per_topic == 4
    assert "someFutureField" in caplog.text and str(path) in caplog.text


def test_lenient_still_fails_on_a_wrong_type(tmp_path):
    error = error_for(write_workload(tmp_path, topics="abc", other=1), lenient=True)
    assert error.path == "topics"


def test_wrong_type_says_what_was_expected(tmp_path):
    error = error_for(write_workload(tmp_path, topics="abc"))
    assert error.path == "topics" and error.value == "abc"
    assert "expected an integer, got 'abc'" in str(error)


def test_unknown_key_distributor_is_an_error_listing_the_allowed_ones(tmp_path):
    error = error_for(write_workload(tmp_path, keyDistributor="RANDOM"))
    assert error.path == "keyDistributor" and error.value == "RANDOM"
    assert error.allowed == ["NO_KEY", "KEY_ROUND_ROBIN", "RANDOM_NANO"]


@pytest.mark.parametrize(
    ("changes", "field", "fragment"),
    [
        ({"topics": "0"}, "topics", ">= 1"),
        ({"partitionsPerTopic": "0"}, "partitionsPerTopic", ">= 1"),
        ({"messageSize": "0"}, "messageSize", ">= 1"),
        ({"subscriptionsPerTopic": "-1"}, "subscriptionsPerTopic", ">= 0"),
        ({"producersPerTopic": "-1"}, "producersPerTopic", ">= 0"),
        ({"consumerPerSubscription": "-1"}, "consumerPerSubscription", ">= 0"),
        ({"producerRate": "-3"}, "producerRate", ">= -1"),
        ({"producerRate": "-0.5"}, "producerRate", "0 / -1 for rate discovery"),
        ({"producerRate": ".inf"}, "producerRate", "finite"),
        ({"randomBytesRatio": "1.5"}, "randomBytesRatio", "<= 1"),
        ({"randomBytesRatio": "-0.1"}, "randomBytesRatio", ">= 0"),
        ({"backlogDrainRatio": "0"}, "backlogDrainRatio", "> 0"),
        ({"backlogDrainRatio": "1.5"}, "backlogDrainRatio", "<= 1"),
        ({"testDurationMinutes": "0"}, "testDurationMinutes", "> 0"),
        ({"warmupDurationMinutes": "-1"}, "warmupDurationMinutes", ">= 0"),
        ({"consumerBacklogSizeGB": "-1"}, "consumerBacklogSizeGB", ">= 0"),
        (
            {"useRandomizedPayloads": "true", "randomizedPayloadPoolSize": "0"},
            "randomizedPayloadPoolSize",
            "at least 1 when useRandomizedPayloads",
        ),
        (
            {"consumerBacklogSizeGB": "1", "producerRate": "0"},
            "producerRate",
            "cannot discover the producer rate while building a backlog",
        ),
        (
            {"topics": "1000", "partitionsPerTopic": "10001"},
            "partitionsPerTopic",
            "topics × partitionsPerTopic <= 10,000,000",
        ),
    ],
)
def test_out_of_range_values_name_the_field_and_what_is_allowed(tmp_path, changes, field, fragment):
    error = error_for(write_workload(tmp_path, **changes))
    assert error.path == field
    assert fragment in str(error)


@pytest.mark.parametrize("field", ["topics", "partitionsPerTopic", "messageSize"])
def test_a_required_count_left_out_is_an_error_not_omb_zero(tmp_path, field):
    error = error_for(write_workload(tmp_path, drop=[field]))
    assert error.path == field and "required field is missing" in str(error)


def test_missing_test_duration_is_an_error_instead_of_running_forever(tmp_path):
    error = error_for(write_workload(tmp_path, drop=["testDurationMinutes"]))
    assert error.path == "testDurationMinutes" and "(allowed: > 0)" in str(error)


def test_the_size_guard_accepts_exactly_ten_million_partitions(tmp_path):
    path = write_workload(tmp_path, topics="1000", partitionsPerTopic="10000")
    assert load_workload(path).topics == 1000


def payload_workload(tmp_path, payload_file, size=16):
    folder = tmp_path / "workloads"
    folder.mkdir(exist_ok=True)
    path = write_workload(folder, messageSize=size, payloadFile=payload_file)
    return load_workload(path), path


def test_payload_file_is_looked_up_in_the_working_directory_first(tmp_path, monkeypatch):
    workload, path = payload_workload(tmp_path, "p.data")
    (path.parent / "p.data").write_bytes(b"w" * 16)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "p.data").write_bytes(b"c" * 16)
    monkeypatch.chdir(cwd)
    assert resolve_payload_file(workload, path).read_bytes() == b"c" * 16


def test_payload_file_falls_back_to_the_workload_folder(tmp_path, monkeypatch):
    workload, path = payload_workload(tmp_path, "payload/p.data")
    (path.parent / "payload").mkdir()
    (path.parent / "payload" / "p.data").write_bytes(b"w" * 16)
    monkeypatch.chdir(tmp_path)
    assert resolve_payload_file(workload, path) == path.parent / "payload" / "p.data"


def test_missing_payload_file_names_file_field_and_value(tmp_path, monkeypatch):
    workload, path = payload_workload(tmp_path, "nope.data")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as caught:
        resolve_payload_file(workload, path)
    error = caught.value
    assert (error.file, error.path, error.value) == (str(path), "payloadFile", "nope.data")


def test_payload_file_of_the_wrong_length_is_an_error(tmp_path, monkeypatch):
    workload, path = payload_workload(tmp_path, "p.data", size=100)
    (path.parent / "p.data").write_bytes(b"x" * 99)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as caught:
        resolve_payload_file(workload, path)
    assert "99 bytes but messageSize is 100" in str(caught.value)
    assert caught.value.path == "payloadFile"


def test_validate_checks_the_payload_file_a_run_would_read(tmp_path, monkeypatch):
    _, path = payload_workload(tmp_path, "p.data")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="payload file not found"):
        validate_file(path)
    (path.parent / "p.data").write_bytes(b"x" * 16)
    assert validate_file(path) == "workload"


SHIPPED = sorted((REPO / "configs" / "workloads").glob("*.yaml"))


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_workload_validates(path):
    assert validate_file(path) == "workload"


def test_the_shipped_workload_set_is_complete():
    assert {p.stem for p in SHIPPED} >= {
        "quickstart",
        "1-topic-16-partitions-1kb-10k",
        "1-topic-16-partitions-1kb-50k",
        "1-topic-16-partitions-1kb-max",
        "100-topics-1-partition-1kb",
        "1-topic-1-partition-1kb",
    }


def test_quickstart_is_one_minute_of_10k_1kib_messages_on_16_partitions():
    workload = load_workload(REPO / "configs" / "workloads" / "quickstart.yaml")
    assert workload.name == "quickstart"
    assert (workload.topics, workload.partitions_per_topic, workload.message_size) == (1, 16, 1024)
    assert workload.use_randomized_payloads
    assert (workload.random_bytes_ratio, workload.randomized_payload_pool_size) == (0.5, 1000)
    assert (workload.total_producers, workload.total_consumers) == (1, 1)
    assert workload.producer_rate == 10_000
    assert (workload.test_duration_s, workload.warmup_duration_s) == (60, 15)


@pytest.mark.parametrize(("suffix", "rate"), [("10k", 10_000), ("50k", 50_000), ("max", 10**7)])
def test_16_partition_family_differs_only_in_rate(suffix, rate):
    path = REPO / "configs" / "workloads" / f"1-topic-16-partitions-1kb-{suffix}.yaml"
    workload = load_workload(path)
    assert workload.producer_rate == rate
    assert (workload.partitions_per_topic, workload.message_size) == (16, 1024)
