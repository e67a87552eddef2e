"""Durations on the command line: ``30s``, ``5m``, ``1h``, ``1m30s``, ``250ms`` or plain seconds."""

from __future__ import annotations

import math
import re

from loadgen.base.errors import ConfigError

NUMBER = r"(\d+(?:\.\d+)?|\.\d+)"
DURATION = re.compile(rf"(?:{NUMBER}h)?(?:{NUMBER}m(?!s))?(?:{NUMBER}s)?(?:{NUMBER}ms)?")
"""Units largest first, each at most once: ``1h30m``, ``1m30s``, ``2s500ms``."""
UNIT_SECONDS = (3600.0, 60.0, 1.0, 0.001)
ALLOWED = "e.g. 30s, 5m, 1h, 1m30s or plain seconds"


def parse_duration(text: str, *, option: str) -> float:
    """Seconds in ``text``; a ConfigError naming ``option`` when it is not a duration."""
    cleaned = text.strip().lower()
    match = DURATION.fullmatch(cleaned)
    if re.fullmatch(NUMBER, cleaned):
        seconds = float(cleaned)
    elif cleaned and match:
        seconds = sum(
            float(number) * unit
            for number, unit in zip(match.groups(), UNIT_SECONDS, strict=True)
            if number is not None
        )
    else:
        raise ConfigError(f"{text!r} is not a duration", path=option, value=text, allowed=ALLOWED)
    if not math.isfinite(seconds):
        raise ConfigError(f"{text!r} is too long", path=option, value=text, allowed=ALLOWED)
    return seconds


FOREVER = "forever"


def parse_wait(text: str, *, option: str) -> float:
    """A bound on a wait: a positive duration, or ``forever`` (returned as 0)."""
    if text.strip().lower() == FOREVER:
        return 0.0
    allowed = f"{ALLOWED}, or {FOREVER}"
    try:
        seconds = parse_duration(text, option=option)
    except ConfigError:
        raise ConfigError(
            f"{text!r} is not a duration", path=option, value=text, allowed=allowed
        ) from None
    if seconds <= 0:
        raise ConfigError(f"{text!r} is no wait", path=option, value=text, allowed=allowed)
    return seconds
