"""Bad worker addresses and URLs are refused before anything starts, naming the flag."""

import pytest

from loadgen.base.errors import ConfigError
from loadgen.distributed.placement import Placement, worker_urls
from loadgen.distributed.server import check_exposure, parse_bind
from loadgen.driver_api.driver_spec import DriverSpec

MEMORY = DriverSpec(name="mem", kind="memory")
KAFKA = DriverSpec(name="k", kind="kafka", config={})


@pytest.mark.parametrize(
    ("text", "expected"),
    [("127.0.0.1:8080", ("127.0.0.1", 8080)), ("[::1]:0", ("::1", 0)), ("host:1", ("host", 1))],
)
def test_bind_addresses_parse(text, expected):
    assert parse_bind(text) == expected


@pytest.mark.parametrize("text", ["8080", "host:", ":80", "host:port", "host:70000"])
def test_bad_bind_addresses_name_the_flag(text):
    with pytest.raises(ConfigError, match="--bind"):
        parse_bind(text)


def test_only_loopback_may_go_without_a_token():
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        check_exposure(host, None)
    check_exposure("0.0.0.0", "t")
    with pytest.raises(ConfigError, match="--token"):
        check_exposure("0.0.0.0", None)
    with pytest.raises(ConfigError, match="--token"):
        check_exposure("10.0.0.5", "")


def test_worker_urls_are_checked():
    assert worker_urls("http://a:1, http://b:2/") == ("http://a:1", "http://b:2")
    for bad in ("a:1", "ftp://a:1", ",", "http://"):
        with pytest.raises(ConfigError, match="--workers"):
            worker_urls(bad)


def test_the_memory_driver_cannot_be_split_the_omb_way():
    assert Placement(processes=2).rule(MEMORY) == "topics"
    assert Placement(processes=2).rule(KAFKA) == "omb"
    assert Placement(processes=1, split="omb").rule(MEMORY) == "omb"  # one process: no split
    with pytest.raises(ConfigError, match="--split"):
        Placement(processes=2, split="omb").rule(MEMORY)


def test_the_token_stays_out_of_the_description():
    placement = Placement(workers=("http://a:1",), token="s3cret")
    assert "s3cret" not in repr(placement) and "s3cret" not in str(placement.describe())
