"""OMB's topic and subscription names: a prefix, a zero-padded index and a random suffix."""

from __future__ import annotations

import base64
import os


def random_suffix() -> str:
    """OMB's 7-character suffix: unpadded base64url of 5 random bytes."""
    return base64.urlsafe_b64encode(os.urandom(5)).decode().rstrip("=")


def topic_names(prefix: str, count: int) -> list[str]:
    return [f"{prefix}-{i:07d}-{random_suffix()}" for i in range(count)]


def subscription_names(count: int) -> list[str]:
    return [f"sub-{i:03d}-{random_suffix()}" for i in range(count)]


def subscription_index(name: str) -> int:
    """The index :func:`subscription_names` gave ``name`` (its place among the topic's)."""
    return int(name.split("-")[1])
