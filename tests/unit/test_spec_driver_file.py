"""Driver files pick a driver by our `driver:` or OMB's `driverClass`; the rest is config."""

import pytest

from loadgen.base.errors import ConfigError
from loadgen.driver_api.driver_file import load_driver_spec, spec_from_dict
from loadgen.driver_api.validation import validate_file

OMB = "io.openmessaging.benchmark.driver"
BODY = (
    "commonConfig: bootstrap.servers=127.0.0.1:9092\n"
    "producerConfig: acks=all\n"
    "consumerConfig: auto.offset.reset=earliest\n"
)


def write(tmp_path, text):
    path = tmp_path / "d.yaml"
    path.write_text(text)
    return path


def error_for(loader, path):
    with pytest.raises(ConfigError) as caught:
        loader(path)
    assert caught.value.exit_code == 2 and caught.value.file == str(path)
    return caught.value


@pytest.mark.parametrize(
    ("driver_class", "kind"),
    [
        (f"{OMB}.kafka.KafkaBenchmarkDriver", "kafka"),
        (f"{OMB}.pulsar.PulsarBenchmarkDriver", "pulsar"),
        (f"{OMB}.rabbitmq.RabbitMqBenchmarkDriver", "rabbitmq"),
        (f"{OMB}.pravega.PravegaBenchmarkDriver", "pravega"),
    ],
)
def test_omb_driver_class_maps_to_our_driver(tmp_path, driver_class, kind):
    spec = load_driver_spec(write(tmp_path, f"name: X\ndriverClass: {driver_class}\n" + BODY))
    assert (spec.name, spec.kind) == ("X", kind)
    assert set(spec.config) == {"commonConfig", "producerConfig", "consumerConfig"}
    assert spec.source == str(tmp_path / "d.yaml")


def test_our_driver_key_selects_the_driver(tmp_path):
    spec = load_driver_spec(write(tmp_path, "name: M\ndriver: memory\npollIntervalMs: 1\n"))
    assert (spec.kind, dict(spec.config)) == ("memory", {"pollIntervalMs": 1})


def test_driver_and_a_matching_driver_class_are_both_accepted(tmp_path):
    text = f"name: K\ndriver: kafka\ndriverClass: {OMB}.kafka.KafkaBenchmarkDriver\n" + BODY
    assert load_driver_spec(write(tmp_path, text)).kind == "kafka"


@pytest.mark.parametrize(
    ("header", "path", "fragment", "allowed"),
    [
        ("name: K\n", "driver", "does not say which driver", "driverClass: <OMB driver class>"),
        (
            "name: K\ndriverClass: com.example.Nope\n",
            "driverClass",
            "unknown OMB driver class",
            f"{OMB}.kafka.KafkaBenchmarkDriver",
        ),
        ("name: K\ndriverClass: [a]\n", "driverClass", "unknown OMB driver class", None),
        (
            f"name: K\ndriver: memory\ndriverClass: {OMB}.kafka.KafkaBenchmarkDriver\n",
            "driver",
            "disagrees with driverClass (which means 'kafka')",
            "kafka",
        ),
        ("name: K\ndriver: 3\n", "driver", "expected a driver name", None),
        ("driver: kafka\n", "name", "required field", None),
        ("name: ''\ndriver: kafka\n", "name", "required field", None),
    ],
)
def test_driver_selection_errors(tmp_path, header, path, fragment, allowed):
    error = error_for(load_driver_spec, write(tmp_path, header + BODY))
    assert error.path == path and fragment in str(error)
    if allowed is not None:
        assert allowed in error.allowed


def test_spec_from_dict_for_programmatic_use():
    spec = spec_from_dict({"name": "M", "driver": "memory"}, source=None, lenient=True)
    assert (spec.kind, spec.source, spec.lenient, dict(spec.config)) == ("memory", None, True, {})


def test_validate_tells_driver_files_from_workloads(tmp_path):
    assert validate_file(write(tmp_path, "name: M\ndriver: memory\n")) == "driver"


def test_validate_lists_installed_drivers_for_an_unknown_name(tmp_path):
    error = error_for(validate_file, write(tmp_path, "name: X\ndriver: kafak\n"))
    assert error.path == "driver" and {"kafka", "memory"} <= set(error.allowed)


def test_validate_runs_the_drivers_own_checks_without_connecting(tmp_path):
    text = "name: K\ndriver: kafka\n" + BODY.replace("commonConfig", "comonConfig")
    error = error_for(validate_file, write(tmp_path, text))
    assert "did you mean 'commonConfig'" in str(error)


def test_validate_passes_lenient_on_to_the_driver(tmp_path):
    path = write(tmp_path, "name: M\ndriver: memory\npollIntervalMss: 1\n")
    assert "did you mean 'pollIntervalMs'" in str(error_for(validate_file, path))
    assert validate_file(path, lenient=True) == "driver"


def test_environment_references_are_expanded_at_any_depth(tmp_path, monkeypatch):
    monkeypatch.setenv("LG_TEST_BOOTSTRAP", "broker-1:9092,broker-2:9092")
    monkeypatch.setenv("LG_TEST_EMPTY", "")
    monkeypatch.delenv("LG_TEST_UNSET", raising=False)
    spec = load_driver_spec(
        write(
            tmp_path,
            "name: Kafka\ndriver: kafka\n"
            "commonConfig: bootstrap.servers=${LG_TEST_BOOTSTRAP}\n"
            "producerConfig: acks=${LG_TEST_UNSET:-all}\nconsumerConfig: a=${LG_TEST_EMPTY:-1}\n"
            "topicConfig: {retention: '${LG_TEST_UNSET:-}', keep: $literal}\n",
        )
    )
    assert spec.config["commonConfig"] == "bootstrap.servers=broker-1:9092,broker-2:9092"
    assert (spec.config["producerConfig"], spec.config["consumerConfig"]) == ("acks=all", "a=1")
    assert spec.config["topicConfig"] == {"retention": "", "keep": "$literal"}


@pytest.mark.parametrize("value", [None, ""])
def test_an_unset_or_empty_variable_without_default_names_field_and_variable(
    tmp_path, monkeypatch, value
):
    if value is None:
        monkeypatch.delenv("LG_TEST_VAR", raising=False)
    else:
        monkeypatch.setenv("LG_TEST_VAR", value)
    path = write(tmp_path, "name: K\ndriver: kafka\nconsumerConfig: {group: '${LG_TEST_VAR}'}\n")
    error = error_for(load_driver_spec, path)
    assert error.path == "consumerConfig.group" and "LG_TEST_VAR" in str(error)
    assert "${LG_TEST_VAR:-DEFAULT}" in str(error)
