"""Command-line durations: unit suffixes largest first, or plain seconds."""

import pytest

from loadgen.base.errors import ConfigError
from loadgen.spec import parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30),
        ("5m", 300),
        ("1h", 3600),
        ("1m30s", 90),
        ("1h30m", 5400),
        ("250ms", 0.25),
        ("2s500ms", 2.5),
        ("1.5m", 90),
        ("30", 30),
        ("2.5", 2.5),
        (" 10S ", 10),
        ("0", 0),
    ],
)
def test_accepted_durations_in_seconds(text, seconds):
    assert parse_duration(text, option="--duration") == seconds


@pytest.mark.parametrize(
    "text", ["", " ", "abc", "5x", "-3", "-3s", "1m-5s", "m", "ms", "5s5s", "30s1m", "inf", "1e3"]
)
def test_rejected_durations_name_the_option_and_the_accepted_forms(text):
    with pytest.raises(ConfigError) as caught:
        parse_duration(text, option="--warmup")
    error = caught.value
    assert error.path == "--warmup" and error.value == text and error.exit_code == 2
    assert error.allowed == "e.g. 30s, 5m, 1h, 1m30s or plain seconds"


def test_an_overflowing_duration_is_rejected():
    with pytest.raises(ConfigError, match="too long"):
        parse_duration("9" * 400, option="--duration")
