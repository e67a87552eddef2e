"""Secrets never reach a result file."""

from loadgen.results.metadata import redact


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
