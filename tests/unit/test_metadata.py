"""Secrets never reach a result file."""

from unittest.mock import ANY
from urllib.parse import urlsplit

import pytest

from loadgen.base import redaction
from loadgen.base.redaction import redact
from loadgen.driver_api import driver_classes

URL_SCHEMES = sorted(
    {scheme for driver in driver_classes().values() for scheme in driver.url_schemes}
    | {"http", "https"}  # Pulsar's admin URL
)


def test_secret_keys_and_uri_userinfo_are_redacted_in_mappings_and_properties_text():
    config = {
        "commonConfig": "bootstrap.servers=b:9092\nsasl.password=hunter2\nsasl.jaas.config=x y",
        "amqpUris": ["amqp://user:pw@host:5672/vhost"],
        "authentication": {"token": "abc", "plugin": "p"},
    }
    redacted = redact(config)
    text = repr(redacted)
    assert "hunter2" not in text and "abc" not in text and "pw@" not in text and "x y" not in text
    assert "bootstrap.servers=b:9092" in redacted["commonConfig"]
    assert redacted["amqpUris"] == ["amqp://<redacted>@host:5672/vhost"]
    assert redacted["authentication"]["plugin"] == "p"


@pytest.mark.parametrize("scheme", URL_SCHEMES)
def test_a_password_holding_an_at_sign_is_cut_where_the_clients_cut_it(scheme):
    """urllib, and pika through it, take the authority's last ``@``: the host is ``host``."""
    uri = f"{scheme}://bench:p@ss@host:5672/%2F"
    assert urlsplit(uri).hostname == "host" and urlsplit(uri).password == "p@ss"
    redacted = redact({"amqpUris": [uri], "text": f"a={uri} b={uri}"})
    assert redacted["amqpUris"] == [f"{scheme}://<redacted>@host:5672/%2F"]
    assert (
        redacted["text"]
        == f"a={scheme}://<redacted>@host:5672/%2F b={scheme}://<redacted>@host:5672/%2F"
    )
    assert "ss@" not in repr(redacted)


def test_every_uri_of_a_text_loses_its_user_info_even_without_a_space_between():
    text = "amqp://u:p1@h1,amqp://u:p2@h2/%2F"
    assert redact(text) == "amqp://<redacted>@h1,amqp://<redacted>@h2/%2F"


def test_pika_reads_the_same_host_and_password_that_redaction_cuts_at():
    pika = pytest.importorskip("pika")
    parameters = pika.URLParameters("amqp://bench:p@ss@host:5672/%2F")
    assert (parameters.host, parameters.credentials.password) == ("host", "p@ss")


def test_a_pulsar_token_under_its_plain_data_key_is_redacted():
    """The Pulsar driver declares ``authentication.data`` secret; loading it tells redaction."""
    assert "authentication.data" in driver_classes()["pulsar"].secret_fields
    client = {
        "serviceUrl": "pulsar://127.0.0.1:6650",
        "authentication": {
            "plugin": "org.apache.pulsar.client.impl.auth.AuthenticationToken",
            "data": "token:eyJhbGciOi.secret",
        },
    }
    redacted = redact({"client": client})["client"]
    assert redacted["authentication"]["data"] == "<redacted>"
    assert redacted["authentication"]["plugin"] == client["authentication"]["plugin"]
    assert redacted["serviceUrl"] == client["serviceUrl"]


def test_a_name_is_secret_once_a_loaded_driver_declares_it(monkeypatch):
    monkeypatch.setattr(redaction, "_declared", set())
    config = {"section": {"blob": "opaque", "other": "shown"}}
    assert redact(config)["section"]["blob"] == "opaque"
    redaction.declare_secrets(["BLOB"])
    assert redact(config)["section"] == {"blob": "<redacted>", "other": "shown"}
    assert redact("blob=opaque\nother=shown") == "blob=<redacted>\nother=shown"


def test_the_run_block_names_the_client_versions_and_the_machine(tmp_path):
    import os
    from importlib.metadata import version

    import loadgen
    from loadgen.engine import recorder

    result = loadgen.run(
        {
            "topics": 1,
            "partitionsPerTopic": 1,
            "messageSize": 10,
            "subscriptionsPerTopic": 1,
            "consumerPerSubscription": 1,
            "producersPerTopic": 1,
            "producerRate": 100,
            "testDurationMinutes": 1,
        },
        loadgen.driver("memory"),
        duration=1,
        warmup=0,
    )
    run = result.document["run"]
    assert run["clientVersions"] == {"numpy": version("numpy")}  # memory: no client
    assert run["cpuCount"] == os.cpu_count()
    assert run["cpuAffinity"] == sorted(os.sched_getaffinity(0))
    assert run["loadgenVersion"] == loadgen.base.version.__version__
    compiled = recorder.ProducerRecorder is recorder.CompiledProducerRecorder
    assert run["recorderEngine"] == ("c" if compiled else "python")
    assert run["recorderEngines"] == {"local": run["recorderEngine"]}  # its one worker


def test_properties_lines_with_a_colon_and_in_memory_keys_are_redacted():
    config = {
        "commonConfig": "sasl.password: hunter2\nssl.truststore.location: /etc/ts.p12\n"
        'sasl.jaas.config: x required password="pw2";',
        "translated": {"ssl.key.pem": "-----BEGIN PRIVATE KEY-----k", "ssl.keystore.key": "k2"},
    }
    redacted = redact(config)
    text = repr(redacted)
    assert "hunter2" not in text and "pw2" not in text and "BEGIN PRIVATE" not in text
    assert "k2" not in text
    assert "sasl.password:<redacted>" in redacted["commonConfig"]
    assert "ssl.truststore.location: /etc/ts.p12" in redacted["commonConfig"]


def test_the_client_versions_are_those_the_runs_driver_declares():
    from importlib.metadata import version

    from loadgen.driver_api.driver_spec import DriverSpec
    from loadgen.formats.metadata import client_versions

    kafka = client_versions(DriverSpec(name="K", kind="kafka", config={}))
    rabbitmq = client_versions(DriverSpec(name="R", kind="rabbitmq", config={}))
    assert kafka == {"confluent-kafka": version("confluent-kafka"), "numpy": ANY}
    assert rabbitmq == {"pika": version("pika"), "numpy": ANY}
