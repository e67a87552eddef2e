"""Rates and sizes as people type them: ``10k``, ``1.5M`` msg/s; ``512``, ``4KiB``, ``1MiB``.

One rule everywhere (command line and YAML): ``k``, ``M``, ``G`` are decimal (``10k`` = 10 000,
``4KB`` = 4 000 bytes), ``Ki``, ``Mi``, ``Gi`` are binary (``4KiB`` = 4 096 bytes). A size may
end in ``B``. Results always hold the plain numbers (OMB's ints and floats).
"""

from __future__ import annotations

import math
import re
from typing import Any

from loadgen.base.errors import ConfigError

NUMBER_TEXT = re.compile(r"(\d+(?:\.\d+)?|\.\d+)\s*([kKMG]i?)?")
SIZE_TEXT = re.compile(r"(\d+(?:\.\d+)?|\.\d+)\s*([kKMG]i?)?[bB]?")
MULTIPLIERS = {
    None: 1,
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "ki": 2**10,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
}
RATE_ALLOWED = "a positive number of msg/s, optionally with k, M or G (10k, 1.5M)"
SIZE_ALLOWED = "a whole number of bytes, optionally with KiB, MiB, GiB (binary) or KB, MB (decimal)"


def _scaled(value: Any, pattern: re.Pattern[str]) -> float | None:
    """The number ``value`` stands for, or ``None`` when it is neither a number nor a text."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and (match := pattern.fullmatch(value.strip())):
        return float(match.group(1)) * MULTIPLIERS[match.group(2)]
    return None


def parse_rate(value: Any, path: str) -> float:
    """msg/s from a number or a text such as ``10k`` or ``1.5M``."""
    number = _scaled(value, NUMBER_TEXT)
    if number is None or not (number > 0 and math.isfinite(number)):
        raise ConfigError(f"{value!r} is not a rate", path=path, value=value, allowed=RATE_ALLOWED)
    return number


def parse_size(value: Any, path: str) -> int:
    """Bytes from a number or a text such as ``512``, ``4KiB``, ``1MiB`` or ``4KB``."""
    number = _scaled(value, SIZE_TEXT)
    if number is None or not (number >= 1 and number.is_integer()):
        raise ConfigError(f"{value!r} is not a size", path=path, value=value, allowed=SIZE_ALLOWED)
    return int(number)
