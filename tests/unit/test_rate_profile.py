"""producerRateProfile: parsing with errors that name the segment, and the rate over time."""

import pytest

from loadgen.base.errors import ConfigError
from loadgen.running.scenarios.rate_control import profile_rate, rate_control_for
from loadgen.spec import Workload, parse_model
from loadgen.spec.rate_profile import RateSegment

BASE = {
    "topics": 1,
    "partitionsPerTopic": 1,
    "messageSize": 10,
    "producersPerTopic": 1,
    "testDurationMinutes": 1,
}


def parse(**fields):
    return parse_model(Workload, BASE | fields, file="w.yaml")


def test_steps_and_ramps_parse_with_rate_suffixes_and_duration_texts():
    workload = parse(
        producerRateProfile=[
            {"rate": "10k", "duration": "1m"},
            {"rampTo": "1.5M", "duration": 30},
            {"rate": 250, "duration": "1m30s"},
        ]
    )
    assert workload.producer_rate_profile == (
        RateSegment("step", 10_000, 60),
        RateSegment("ramp", 1_500_000, 30),
        RateSegment("step", 250, 90),
    )
    assert workload.start_rate == 10_000
    assert not workload.is_rate_discovery


def test_the_profile_is_echoed_with_its_yaml_keys():
    workload = parse(producerRateProfile=[{"rate": "2k", "duration": 5}])
    dumped = workload.model_dump(by_alias=True, mode="json")
    assert dumped["producerRateProfile"] == [{"rate": 2000.0, "duration": 5.0}]
    assert parse_model(Workload, dumped, file="echo") == workload


@pytest.mark.parametrize(
    ("profile", "path", "text"),
    [
        ([{"rate": "10x", "duration": 1}], "producerRateProfile.0.rate", "is not a rate"),
        ([{"rate": 0, "duration": 1}], "producerRateProfile.0.rate", "is not a rate"),
        (
            [{"rate": 1, "duration": 1}, {"rampTo": -5, "duration": 1}],
            "producerRateProfile.1.rampTo",
            "is not a rate",
        ),
        ([{"rate": 1, "duration": "soon"}], "producerRateProfile.0.duration", "is not a duration"),
        ([{"rate": 1, "duration": 0}], "producerRateProfile.0.duration", "not a positive duration"),
        (
            [{"rate": 1, "rampTo": 2, "duration": 1}],
            "producerRateProfile.0",
            "either rate or rampTo",
        ),
        ([{"rate": 1}], "producerRateProfile.0", "either rate or rampTo"),
        ([{"rat": 1, "duration": 1}], "producerRateProfile.0", "unknown field 'rat'"),
        ([5], "producerRateProfile.0", "must be a mapping"),
        ([], "producerRateProfile", "non-empty list"),
        ("fast", "producerRateProfile", "non-empty list"),
    ],
)
def test_bad_segments_are_config_errors_naming_file_field_and_value(profile, path, text):
    with pytest.raises(ConfigError) as caught:
        parse(producerRateProfile=profile)
    error = caught.value
    assert (error.file, error.path) == ("w.yaml", path)
    assert text in str(error)
    assert error.allowed


def test_a_profile_opening_with_a_ramp_needs_a_producer_rate_to_start_from():
    with pytest.raises(ConfigError) as caught:
        parse(producerRateProfile=[{"rampTo": "10k", "duration": 10}])
    assert caught.value.path == "producerRate"
    workload = parse(producerRate=1000, producerRateProfile=[{"rampTo": "10k", "duration": 10}])
    assert workload.start_rate == 1000


STEPS = (
    RateSegment("step", 10_000, 2),
    RateSegment("ramp", 20_000, 4),
    RateSegment("step", 500, 1),
)


@pytest.mark.parametrize(
    ("elapsed", "rate"),
    [
        (0, 10_000),
        (1.99, 10_000),
        (2.0, 11_250),  # first ramp second: the ramp's mean over it (10 000 -> 12 500)
        (3.5, 13_750),
        (5.99, 18_750),
        (6.0, 500),
        (7.0, 500),  # after the last segment, its rate holds
        (100, 500),
    ],
)
def test_the_profile_rate_follows_steps_and_ramps_in_one_second_steps(elapsed, rate):
    assert profile_rate(STEPS, 1_000, elapsed) == pytest.approx(rate)


def test_a_ramp_sends_as_many_messages_as_the_linear_ramp_even_with_a_partial_last_step():
    ramp = (RateSegment("ramp", 5_000, 2.5),)
    messages = sum(profile_rate(ramp, 0, t / 100) / 100 for t in range(250))
    assert messages == pytest.approx(2.5 * 5_000 / 2)


def test_an_opening_ramp_starts_from_the_producer_rate():
    ramp = (RateSegment("ramp", 3_000, 2),)
    assert profile_rate(ramp, 1_000, 0) == pytest.approx(1_500)


def test_a_fixed_rate_has_no_rate_control_and_rate_zero_discovers():
    assert rate_control_for(parse(producerRate=100)) is None
    assert rate_control_for(parse(producerRate=0)).start_rate == 10_000
    assert rate_control_for(parse(producerRate=-1)).start_rate == 10_000
    assert rate_control_for(parse(producerRate=0, producersPerTopic=0)) is None  # nothing to pace
    profiled = parse(producerRateProfile=[{"rate": 42, "duration": 1}])
    assert rate_control_for(profiled).start_rate == 42
