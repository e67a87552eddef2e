"""What a test does when a local broker cannot run: skip, or fail when brokers are required.

``LOADGEN_REQUIRE_BROKERS=1`` (CI sets it) turns the skip into a failure, so a green run has
exercised every broker instead of quietly skipping one.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def unavailable(reason: str) -> NoReturn:
    if os.environ.get("LOADGEN_REQUIRE_BROKERS") == "1":
        pytest.fail(f"{reason} (LOADGEN_REQUIRE_BROKERS=1)")
    pytest.skip(reason)
