"""parse_model is generic: drivers validate their own (nested) sections through it."""

import logging
from enum import StrEnum
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from loadgen.base.errors import ConfigError
from loadgen.spec import parse_model

STRICT = ConfigDict(extra="forbid", populate_by_name=True)


class Subscription(StrEnum):
    FAILOVER = "Failover"
    SHARED = "Shared"


class Producer(BaseModel):
    model_config = STRICT
    batching_max_bytes: int = Field(default=131072, alias="batchingMaxBytes")
    batching_enabled: bool = Field(default=True, alias="batchingEnabled")


class Consumer(BaseModel):
    model_config = STRICT
    subscription_type: Subscription = Field(default=Subscription.FAILOVER, alias="subscriptionType")
    topic_type: Literal["persistent", "non-persistent"] = Field(
        default="persistent", alias="topicType"
    )


class Section(BaseModel):
    model_config = STRICT
    producer: Producer | None = None
    consumer: Consumer = Field(default_factory=Consumer)
    extra_producers: list[Producer] = Field(default_factory=list, alias="extraProducers")
    named: dict[str, Producer] = Field(default_factory=dict)
    url: str = Field(alias="serviceUrl")


def parse(data, **kwargs):
    return parse_model(Section, data, file="pulsar.yaml", **kwargs)


def failure(data, **kwargs):
    with pytest.raises(ConfigError) as caught:
        parse(data, **kwargs)
    assert caught.value.file == "pulsar.yaml"
    return caught.value


def test_nested_misspelt_key_has_a_dotted_path_prefix_and_suggestion():
    data = {"serviceUrl": "x", "producer": {"batchingMaxByte": 1}}
    with pytest.raises(ConfigError) as caught:
        parse_model(Section, data, file="pulsar.yaml", path_prefix="driver")
    error = caught.value
    assert error.path == "driver.producer.batchingMaxByte"
    assert "did you mean 'batchingMaxBytes'" in str(error)
    assert error.allowed == ["batchingMaxBytes", "batchingEnabled"]


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"extraProducers": [{}, {"batchingEnabledd": True}]}, "extraProducers.1.batchingEnabledd"),
        ({"named": {"a": {"batchingMaxByts": 1}}}, "named.a.batchingMaxByts"),
    ],
)
def test_unknown_keys_inside_lists_and_maps_of_models_get_suggestions(data, path):
    error = failure({"serviceUrl": "x"} | data)
    assert error.path == path and "did you mean 'batching" in str(error)


def test_unknown_top_level_key_lists_every_valid_key():
    error = failure({"serviceUrl": "x", "zzz": 1})
    assert str(error).endswith(
        "unknown field 'zzz' (allowed: producer, consumer, extraProducers, named, serviceUrl)"
    )


def test_nested_wrong_type_names_the_nested_field():
    error = failure({"serviceUrl": "x", "producer": {"batchingMaxBytes": "lots"}})
    assert error.path == "producer.batchingMaxBytes"
    assert "expected an integer, got 'lots'" in str(error)


@pytest.mark.parametrize(
    ("field", "allowed"),
    [("subscriptionType", ["Failover", "Shared"]), ("topicType", ["persistent", "non-persistent"])],
)
def test_bad_enum_or_literal_lists_its_values(field, allowed):
    error = failure({"serviceUrl": "x", "consumer": {field: "Exclusive"}})
    assert error.path == f"consumer.{field}" and error.allowed == allowed


def test_a_section_that_is_not_a_mapping_says_so():
    error = failure({"serviceUrl": "x", "producer": [1, 2]})
    assert error.path == "producer" and "expected a mapping" in str(error)


def test_required_field_without_default_is_reported_missing():
    error = failure({})
    assert error.path == "serviceUrl" and "required field is missing" in str(error)


def test_lenient_drops_unknown_keys_at_every_depth_and_warns(caplog):
    data = {
        "serviceUrl": "x",
        "future": 1,
        "producer": {"batchingMaxBytes": 7, "newKnob": 2},
        "extraProducers": [{"other": 3}],
    }
    with caplog.at_level(logging.WARNING, logger="loadgen.spec"):
        section = parse(data, lenient=True)
    assert section.producer.batching_max_bytes == 7
    assert len(section.extra_producers) == 1
    for dotted in ("'future'", "'producer.newKnob'", "'extraProducers.0.other'"):
        assert dotted in caplog.text
    assert "pulsar.yaml" in caplog.text
    assert data["producer"] == {"batchingMaxBytes": 7, "newKnob": 2}  # the caller's data is kept


def test_lenient_still_rejects_a_wrong_type():
    error = failure({"serviceUrl": "x", "unknown": 1, "producer": {"batchingEnabled": "maybe"}})
    assert error.path == "unknown"
    error = failure(
        {"serviceUrl": "x", "unknown": 1, "producer": {"batchingEnabled": "maybe"}}, lenient=True
    )
    assert error.path == "producer.batchingEnabled" and "expected true or false" in str(error)


def test_top_level_that_is_not_a_mapping_is_an_error():
    with pytest.raises(ConfigError, match="expected a mapping of fields, got list"):
        parse_model(Section, [1], file="pulsar.yaml", path_prefix="pulsar")
