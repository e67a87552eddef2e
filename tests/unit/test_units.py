"""Rates and sizes with suffixes: one rule for flags and YAML (k/M/G decimal, Ki/Mi/Gi binary)."""

import pytest

from loadgen.base.errors import ConfigError
from loadgen.spec import Workload, parse_model
from loadgen.spec.units import parse_rate, parse_size


@pytest.mark.parametrize(
    ("text", "rate"),
    [("10k", 10_000), ("1.5k", 1_500), ("1M", 1_000_000), ("250", 250), (" 2G ", 2e9), (7, 7)],
)
def test_rates_take_decimal_suffixes(text, rate):
    assert parse_rate(text, "--rate") == rate


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("512", 512),
        (512, 512),
        ("4KiB", 4096),
        ("1KiB", 1024),
        ("1MiB", 1_048_576),
        ("1Mi", 1_048_576),
        ("4KB", 4000),
        ("4kB", 4000),
        ("4k", 4000),
        ("100B", 100),
        ("1.5KiB", 1536),
    ],
)
def test_sizes_take_binary_and_decimal_suffixes(text, size):
    assert parse_size(text, "--size") == size


@pytest.mark.parametrize("text", ["0", "-1", "fast", "1.5", "4 KiBs", "0.1KiB", True, None])
def test_a_bad_size_names_the_option_the_value_and_the_forms(text):
    with pytest.raises(ConfigError) as raised:
        parse_size(text, "--size")
    message = str(raised.value)
    assert "--size" in message and "KiB" in message


@pytest.mark.parametrize("text", ["0", "-5", "10x", "", "inf"])
def test_a_bad_rate_names_the_option_and_the_forms(text):
    with pytest.raises(ConfigError, match=r"--rate.*10k, 1\.5M"):
        parse_rate(text, "--rate")


def test_workload_yaml_takes_suffixes_and_keeps_omb_numbers():
    fields = {
        "topics": 1,
        "partitionsPerTopic": 1,
        "messageSize": "4KiB",
        "producerRate": "1.5k",
        "testDurationMinutes": 1,
    }
    workload = parse_model(Workload, fields, file="w.yaml")
    assert (workload.message_size, workload.producer_rate) == (4096, 1500.0)
    dumped = workload.model_dump(by_alias=True, mode="json")
    assert dumped["messageSize"] == 4096 and dumped["producerRate"] == 1500.0


def test_workload_yaml_keeps_omb_rate_discovery_and_names_a_bad_size():
    fields = {"topics": 1, "partitionsPerTopic": 1, "messageSize": 1, "testDurationMinutes": 1}
    assert parse_model(Workload, fields | {"producerRate": -1}, file="w").producer_rate == -1
    with pytest.raises(ConfigError, match=r"w\.yaml: messageSize: '4 lots' is not a size"):
        parse_model(Workload, fields | {"messageSize": "4 lots"}, file="w.yaml")
