"""The NATS driver file without a server: OMB's file as it is, typos, URLs, the light class."""

import subprocess
import sys
from pathlib import Path

import pytest

from loadgen.base.errors import ConfigError
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen_drivers.nats import Driver
from loadgen_drivers.nats.config import StorageType, mask_password
from loadgen_drivers.nats.naming import durable_name, partition_of, stream_name, subjects

ROOT = Path(__file__).resolve().parents[2]


def validated(**fields):
    return Driver.validate_config(DriverSpec("NATS", "nats", fields, "nats.yaml"))


def test_omb_fields_are_read_as_omb_writes_them():
    config = validated(
        natsHostUrl="localhost:4222", replicationFactor=3, storageType="Memory", maxBytes=1 << 30
    )
    assert config.servers == ["nats://localhost:4222"]
    assert config.replication_factor == 3
    assert config.storage_type is StorageType.MEMORY and config.max_bytes == 1 << 30


def test_omb_nats_yaml_parses_as_shipped():
    from loadgen.driver_api.driver_file import load_driver_spec

    spec = load_driver_spec(ROOT / "configs/drivers/nats.yaml")
    assert spec.kind == "nats"
    assert Driver.validate_config(spec).replication_factor == 3


def test_several_servers_each_get_a_scheme_and_the_default_port():
    config = validated(natsHostUrl="h1, nats://u:p@h2:4333,tls://h3")
    assert config.servers == ["nats://h1:4222", "nats://u:p@h2:4333", "tls://h3:4222"]
    assert config.wants_tls


@pytest.mark.parametrize(
    ("field", "value"),
    [("natsHosturl", "localhost:4222"), ("replicationFactr", 1), ("maxPendng", 10)],
)
def test_a_misspelt_field_is_a_config_error_naming_it(field, value):
    fields = {"natsHostUrl": "localhost:4222", field: value}
    with pytest.raises(ConfigError) as raised:
        validated(**fields)
    assert field in str(raised.value) and "nats.yaml" in str(raised.value)


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"natsHostUrl": "http://h:4222"}, "natsHostUrl"),
        ({"natsHostUrl": "h:port"}, "natsHostUrl"),
        ({"natsHostUrl": "h", "storageType": "Disk"}, "storageType"),
        ({"natsHostUrl": "h", "maxPending": 0}, "maxPending"),
        ({"natsHostUrl": "h", "tls": {"ca_file": "/nonexistent/ca.pem"}}, "tls"),
        ({"natsHostUrl": "h", "tls": {"cafile": "x"}}, "cafile"),
    ],
)
def test_a_bad_value_is_a_config_error_naming_the_field(fields, named):
    with pytest.raises(ConfigError) as raised:
        validated(**fields)
    assert named in str(raised.value)


def test_a_url_run_points_nats_host_url_at_the_url():
    config = Driver.config_from_url("nats://u:p@127.0.0.1:4333", {"maxPending": 10})
    assert config == {"maxPending": 10, "natsHostUrl": "nats://u:p@127.0.0.1:4333"}


def test_a_url_without_an_address_is_refused():
    with pytest.raises(ConfigError):
        Driver.config_from_url("nats://", {})


def test_passwords_are_masked_in_what_errors_show():
    assert mask_password("nats://u:secret@h:4222") == "nats://u:***@h:4222"
    assert mask_password("nats://sometoken@h:4222") == "nats://***@h:4222"
    assert mask_password("nats://h:4222") == "nats://h:4222"


def test_names_on_the_server_avoid_what_jetstream_forbids():
    assert stream_name("a.b*c>d e/f") == "a_b_c_d_e_f"
    assert subjects("t.x", 3) == ["t_x.0", "t_x.1", "t_x.2"]
    assert durable_name("sub.1") == "durable-sub_1"
    assert [partition_of(s) for s in ("t.0", "t_x.12", "t.x")] == [0, 12, -1]


def test_the_registered_class_imports_no_client():
    code = (
        "import sys, loadgen_drivers.nats as n; n.Driver.url_schemes; "
        "assert 'nats.aio' not in sys.modules, 'nats-py imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_driver_declares_omb_class_url_scheme_and_local_brokers():
    assert Driver.omb_driver_classes == (
        "io.openmessaging.benchmark.driver.nats.NatsBenchmarkDriver",
    )
    assert Driver.url_schemes == ("nats",) and Driver.client_distributions == ("nats-py",)
    assert Driver.local_broker is not None and Driver.secured_local_broker is not None
