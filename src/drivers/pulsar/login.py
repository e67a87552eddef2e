"""Who a Pulsar client logs in as, for messages: a refused login names the user, never the
secret."""

from __future__ import annotations

import base64
import binascii
import json
from pathlib import Path

from drivers.pulsar.config import Authentication


def token_of(data: str) -> str:
    """Java's AuthenticationToken parameter: ``token:XYZ``, ``file:PATH`` or the bare token."""
    if data.startswith("token:"):
        return data.removeprefix("token:")
    if data.startswith("file:"):
        return Path(data.removeprefix("file:").removeprefix("//")).read_text().strip()
    return data


def login_name(auth: Authentication) -> str | None:
    """A token's subject (its ``sub`` claim, read without verifying it: the broker does that),
    a basic login's user id, or ``None`` when neither can be read."""
    plugin = (auth.plugin or "").lower()
    if not auth.data:
        return None
    try:
        if plugin.endswith("token"):
            payload = token_of(auth.data).split(".")[1]
            claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
            return str(claims["sub"])
        if plugin.endswith("basic"):
            return str(json.loads(auth.data)["userId"])
    except (OSError, IndexError, KeyError, TypeError, ValueError, binascii.Error):
        return None
    return None
