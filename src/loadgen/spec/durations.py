"""Durations on the command line: ``30s``, ``5m``, ``1h``, ``1m30s``, ``250ms`` or plain seconds."""

from __future__ import annotations

import re

from loadgen.errors import ConfigError

UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
ALLOWED = "e.g. 30s, 5m, 1h, 1m30s or plain seconds"


def parse_duration(text: str, *, option: str) -> float:
    """Seconds in ``text``; a ConfigError naming ``option`` when it is not a duration."""
    cleaned = text.strip().lower()
    try:
        seconds = float(cleaned)
    except ValueError:
        parts = PART.findall(cleaned)
        if not parts or "".join(n + u for n, u in parts) != cleaned:
            raise ConfigError(
                f"{text!r} is not a duration", path=option, value=text, allowed=ALLOWED
            ) from None
        seconds = sum(float(number) * UNITS[unit] for number, unit in parts)
    if seconds < 0 or seconds != seconds or seconds == float("inf"):
        raise ConfigError(f"{text!r} is not a duration", path=option, value=text, allowed=ALLOWED)
    return seconds
