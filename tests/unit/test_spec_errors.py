"""Bad configs fail with the file, the field path, the value and what is allowed."""

import logging

import pytest

from loadgen.errors import ConfigError
from loadgen.spec import load_driver_spec, load_workload, parse_duration, validate_file

GOOD = """\
name: w
topics: 1
partitionsPerTopic: 4
messageSize: 100
subscriptionsPerTopic: 1
consumerPerSubscription: 1
producersPerTopic: 1
producerRate: 1000
testDurationMinutes: 1
"""


def write(tmp_path, text, name="w.yaml", raw=None):
    path = tmp_path / name
    if raw is not None:
        path.write_bytes(raw)
    else:
        path.write_text(text)
    return path


def error_for(path, loader=load_workload, **kwargs):
    with pytest.raises(ConfigError) as caught:
        loader(path, **kwargs)
    assert caught.value.exit_code == 2
    return caught.value


def test_misspelt_field_names_file_field_and_the_nearest_valid_key(tmp_path):
    path = write(tmp_path, GOOD.replace("partitionsPerTopic", "partitionPerTopic"))
    error = error_for(path)
    assert error.file == str(path) and error.path == "partitionPerTopic"
    assert "did you mean 'partitionsPerTopic'" in str(error)
    assert "messageSize" in error.allowed


def test_lenient_ignores_unknown_fields_with_a_warning(tmp_path, caplog):
    path = write(tmp_path, GOOD + "someFutureField: 3\n")
    with caplog.at_level(logging.WARNING):
        workload = load_workload(path, lenient=True)
    assert workload.topics == 1
    assert "someFutureField" in caplog.text


@pytest.mark.parametrize(
    ("change", "field", "fragment"),
    [
        (("topics: 1", "topics: abc"), "topics", "expected an integer"),
        (("topics: 1", "topics: 0"), "topics", "greater than or equal to 1"),
        (("messageSize: 100", "messageSize: -5"), "messageSize", "(allowed: >= 1)"),
        (("producerRate: 1000", "producerRate: -3"), "producerRate", "(allowed: >= -1.0)"),
        (("producerRate: 1000", "producerRate: -0.5"), "producerRate", "0 / -1 for rate discovery"),
        (
            ("testDurationMinutes: 1", "testDurationMinutes: 0"),
            "testDurationMinutes",
            "greater than 0",
        ),
        (("name: w", "name: w\nkeyDistributor: SOMETIMES"), "keyDistributor", "not a valid value"),
        (
            ("name: w", "name: w\nrandomBytesRatio: 1.5"),
            "randomBytesRatio",
            "less than or equal to 1",
        ),
        (("name: w", "name: w\nbacklogDrainRatio: 0"), "backlogDrainRatio", "greater than 0"),
    ],
)
def test_bad_values_name_the_field(tmp_path, change, field, fragment):
    error = error_for(write(tmp_path, GOOD.replace(*change)))
    assert error.path == field
    assert fragment in str(error)


def test_bad_enum_lists_the_allowed_values(tmp_path):
    error = error_for(write(tmp_path, GOOD + "keyDistributor: RANDOM\n"))
    assert set(error.allowed) == {"NO_KEY", "KEY_ROUND_ROBIN", "RANDOM_NANO"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("useRandomizedPayloads: true\n", "randomizedPayloadPoolSize must be at least 1"),
        ("consumerBacklogSizeGB: 1\n", None),
        ("partitionsPerTopic: 20000000\n", "above"),
    ],
)
def test_cross_field_rules(tmp_path, extra, message):
    text = GOOD + extra
    if extra.startswith("consumerBacklogSizeGB"):
        text = text.replace("producerRate: 1000", "producerRate: 0")
        message = "cannot discover the producer rate while building a backlog"
    if extra.startswith("partitionsPerTopic"):
        text = text.replace("partitionsPerTopic: 4\n", "")
    assert message in str(error_for(write(tmp_path, text)))


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"name: w\ntopics: [1\n", "invalid YAML at line"),
        (b"", "empty"),
        (b"- a\n- b\n", "expected a mapping"),
        (b"name: \xff\xfe\n", "not UTF-8"),
    ],
)
def test_unreadable_files_are_config_errors_naming_the_file(tmp_path, content, fragment):
    path = write(tmp_path, None, raw=content)
    error = error_for(path)
    assert fragment in str(error) and str(path) in str(error)


def test_missing_file_is_a_config_error(tmp_path):
    assert "file not found" in str(error_for(tmp_path / "nope.yaml"))


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30),
        ("5m", 300),
        ("1h", 3600),
        ("1m30s", 90),
        ("250ms", 0.25),
        ("30", 30),
        ("2.5", 2.5),
    ],
)
def test_durations(text, seconds):
    assert parse_duration(text, option="--duration") == seconds


@pytest.mark.parametrize("text", ["", "abc", "5x", "-3", "1m-5s", "m"])
def test_bad_durations_name_the_option(text):
    with pytest.raises(ConfigError) as caught:
        parse_duration(text, option="--warmup")
    assert caught.value.path == "--warmup"


DRIVER_BODY = (
    "commonConfig: bootstrap.servers=127.0.0.1:9092\n"
    "producerConfig: acks=all\nconsumerConfig: auto.offset.reset=earliest\n"
)
KAFKA_CLASS = "io.openmessaging.benchmark.driver.kafka.KafkaBenchmarkDriver"


def test_driver_selected_by_omb_driver_class(tmp_path):
    path = write(
        tmp_path,
        "name: K\ndriverClass: io.openmessaging.benchmark.driver.kafka.KafkaBenchmarkDriver\n"
        + DRIVER_BODY,
        "d.yaml",
    )
    spec = load_driver_spec(path)
    assert (spec.name, spec.kind) == ("K", "kafka")
    assert set(spec.config) == {"commonConfig", "producerConfig", "consumerConfig"}


@pytest.mark.parametrize(
    ("header", "path", "fragment"),
    [
        ("name: K\n", "driver", "does not say which driver"),
        ("name: K\ndriverClass: com.example.Nope\n", "driverClass", "unknown OMB driver class"),
        (
            f"name: K\ndriver: memory\ndriverClass: {KAFKA_CLASS}\n",
            "driver",
            "disagrees",
        ),
        ("driver: kafka\n", "name", "required"),
    ],
)
def test_driver_selection_errors(tmp_path, header, path, fragment):
    error = error_for(write(tmp_path, header + DRIVER_BODY, "d.yaml"), loader=load_driver_spec)
    assert error.path == path and fragment in str(error)


def test_unknown_driver_name_lists_the_installed_drivers(tmp_path):
    error = error_for(write(tmp_path, "name: X\ndriver: kafak\n", "d.yaml"), loader=validate_file)
    assert "kafka" in error.allowed and "memory" in error.allowed


def test_validate_checks_the_driver_section_too(tmp_path):
    path = write(
        tmp_path,
        "name: K\ndriver: kafka\n" + DRIVER_BODY.replace("commonConfig", "comonConfig"),
        "d.yaml",
    )
    error = error_for(path, loader=validate_file)
    assert "did you mean 'commonConfig'" in str(error)
