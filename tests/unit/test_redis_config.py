"""The Redis driver file, URLs and stream-key mapping, checked without a server."""

from pathlib import Path

import pytest

from loadgen.base.errors import ConfigError
from loadgen.base.redaction import redact
from loadgen.driver_api import driver_classes
from loadgen.driver_api.driver_file import load_driver_spec, spec_from_dict
from loadgen.driver_api.urls import driver_for_url
from loadgen_drivers.redis import LOCAL_PORT, Driver
from loadgen_drivers.redis.config import StampCarrier, Trim
from loadgen_drivers.redis.frames import trim_arguments, xadd_head
from loadgen_drivers.redis.topology import key_partition, stream_keys

CONFIGS = Path(__file__).resolve().parents[2] / "configs/drivers"
OMB_REDIS_YAML = """\
name: Redis
driverClass: io.openmessaging.benchmark.driver.redis.RedisBenchmarkDriver
# Redis client-specific configuration
redisPort: 6379
redisHost: 127.0.0.1
jedisPoolMaxTotal: 8
jedisPoolMaxIdle: 8
"""
"""OMB's shipped driver-redis/redis.yaml, field for field."""


def validate(tmp_path, text):
    path = tmp_path / "redis.yaml"
    path.write_text(text)
    spec = load_driver_spec(path)
    return spec, Driver.validate_config(spec)


def test_omb_driver_file_selects_the_driver_and_keeps_omb_meanings(tmp_path):
    spec, config = validate(tmp_path, OMB_REDIS_YAML)
    assert spec.kind == "redis"
    assert (config.redis_host, config.redis_port) == ("127.0.0.1", 6379)
    assert (config.jedis_pool_max_total, config.jedis_pool_max_idle) == (8, 8)
    assert config.redis_user is None and config.redis_pass is None


def test_the_shipped_files_parse_and_point_at_the_local_broker():
    for name in ("redis.yaml", "redis-local.yaml"):
        spec = load_driver_spec(CONFIGS / name)
        config = Driver.validate_config(spec)
        assert (config.redis_host, config.redis_port) == ("127.0.0.1", LOCAL_PORT), name
    assert Driver.local_broker.port == LOCAL_PORT


def test_defaults_trim_nothing_and_stamp_the_payload(tmp_path):
    _, config = validate(tmp_path, "name: R\ndriver: redis\nredisHost: h\n")
    assert config.max_len is None and config.trim is Trim.APPROXIMATE
    assert config.stamp_in is StampCarrier.PAYLOAD
    assert (config.pipeline_depth, config.read_count, config.block_ms, config.db) == (
        100, 500, 100, 0,
    )  # fmt: skip
    assert config.tls is None


def test_a_misspelt_field_names_the_file_and_the_field(tmp_path):
    with pytest.raises(ConfigError) as raised:
        validate(tmp_path, "name: R\ndriver: redis\nredisHost: h\npipelinedepth: 10\n")
    assert "pipelinedepth" in str(raised.value) and raised.value.file.endswith("redis.yaml")


@pytest.mark.parametrize(
    "line, field",
    [("redisPort: 0", "redisPort"), ("pipelineDepth: 0", "pipelineDepth"),
     ("trim: sometimes", "trim"), ("jedisPoolMaxTotal: 0", "jedisPoolMaxTotal"),
     ("stampIn: header", "stampIn"), ("tls: {cafile: x}", "tls")],
)  # fmt: skip
def test_bad_values_are_config_errors_naming_the_field(tmp_path, line, field):
    with pytest.raises(ConfigError) as raised:
        validate(tmp_path, f"name: R\ndriver: redis\nredisHost: h\n{line}\n")
    assert field in str(raised.value.path)


def test_an_unreadable_ca_file_is_a_config_error_before_connecting(tmp_path):
    with pytest.raises(ConfigError) as raised:
        validate(
            tmp_path, f"name: R\ndriver: redis\nredisHost: h\ntls: {{caFile: {tmp_path}/no.pem}}\n"
        )
    assert raised.value.path == "tls" and "no such file" in str(raised.value)


def test_the_password_is_a_secret_everywhere_it_is_shown():
    driver_classes()  # declares every driver's secret fields, as the CLI does
    redacted = redact({"redisHost": "h", "redisPass": "hunter2"})
    assert "hunter2" not in str(redacted)


@pytest.mark.parametrize(
    "url, fields",
    [
        ("redis://10.0.0.5", {"redisHost": "10.0.0.5", "redisPort": 6379}),
        ("redis://h:7000/3", {"redisHost": "h", "redisPort": 7000, "db": 3}),
        ("redis://:s%40cret@h:1", {"redisHost": "h", "redisPort": 1, "redisPass": "s@cret"}),
        ("redis://bench:pw@h:1", {"redisUser": "bench", "redisPass": "pw"}),
        ("rediss://h:6380", {"redisHost": "h", "redisPort": 6380, "tls": {}}),
    ],
)
def test_urls_map_onto_the_omb_fields(url, fields):
    spec = driver_for_url(url)
    assert spec.kind == "redis" and spec.name == "Redis Streams"
    assert fields.items() <= spec.config.items()
    Driver.validate_config(spec)


def test_a_rediss_url_keeps_the_trust_settings_of_the_driver_file(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("")
    config = Driver.config_from_url("rediss://h:1", {"tls": {"caFile": str(ca)}})
    assert config["tls"] == {"caFile": str(ca)}


@pytest.mark.parametrize("url", ["redis://h:notaport", "redis://h:1/zero", "redis://"])
def test_a_url_that_is_not_redis_is_a_config_error(url):
    with pytest.raises(ConfigError):
        driver_for_url(url)


def test_one_partition_is_the_topic_key_more_are_numbered():
    assert stream_keys("t", 1) == ["t"]
    assert stream_keys("t", 3) == ["t:0", "t:1", "t:2"]


def test_a_key_always_picks_the_same_stream_and_keys_spread():
    keys = [b"key-%d" % i for i in range(1600)]
    counts = [0] * 16
    for key in keys:
        counts[key_partition(key, 16)] += 1
    assert [key_partition(k, 16) for k in keys] == [key_partition(k, 16) for k in keys]
    assert min(counts) > 1600 / 16 * 0.6


def test_xadd_frames_are_resp_arrays_of_the_right_length():
    assert xadd_head("k", [], stamp_field=False) == (
        b"*5\r\n$4\r\nXADD\r\n$1\r\nk\r\n$1\r\n*\r\n$7\r\npayload\r\n"
    )
    trimmed = xadd_head("k", trim_arguments(1000, exact=False), stamp_field=True)
    assert trimmed.startswith(b"*10\r\n$4\r\nXADD\r\n$1\r\nk\r\n$6\r\nMAXLEN\r\n$1\r\n~\r\n")
    assert trimmed.endswith(b"$8\r\nlg-stamp\r\n$24\r\n")
    assert trim_arguments(5, exact=True) == [b"MAXLEN", b"=", b"5"]


def test_the_registered_class_imports_no_client():
    import subprocess
    import sys

    code = "import sys, loadgen_drivers.redis; print('redis' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_omb_driver_class_and_dict_specs_select_the_driver():
    spec = spec_from_dict(
        {"name": "R", "driverClass": Driver.omb_driver_classes[0], "redisHost": "h"}, source=None
    )
    assert spec.kind == "redis"


def test_import_redis_inside_the_package_is_the_client_not_the_package():
    from loadgen_drivers.redis import connections

    assert connections.redis.__name__ == "redis"
    assert "loadgen_drivers" not in connections.redis.__file__
    assert connections.redis.Connection
