"""Who a Pulsar client logs in as, for messages: a refused login names the user, never the
secret."""

from __future__ import annotations

import base64
import binascii
import json
from pathlib import Path

from loadgen_drivers.pulsar.config import Authentication


def token_of(data: str) -> str:
    """Java's AuthenticationToken parameter: ``token:XYZ``, ``file:PATH`` or the bare token."""
    if data.startswith("token:"):
        return data.removeprefix("token:")
    if data.startswith("file:"):
        return Path(data.removeprefix("file:").removeprefix("//")).read_text().strip()
    return data


def auth_method(auth: Authentication) -> str | None:
    """``token`` or ``basic`` for those plugins (Java's class names or the short ones) when they
    carry data loadgen can read; ``None`` for the others."""
    plugin = (auth.plugin or "").lower()
    if not auth.data:
        return None
    return next((method for method in ("token", "basic") if plugin.endswith(method)), None)


def basic_login(data: str) -> tuple[str, str]:
    """The basic plugin's parameter, ``{"userId": ..., "password": ...}``, as (user, password)."""
    user = json.loads(data)
    return user["userId"], user["password"]


def login_name(auth: Authentication) -> str | None:
    """A token's subject (its ``sub`` claim, read without verifying it: the broker does that),
    a basic login's user id, or ``None`` when neither can be read."""
    method = auth_method(auth)
    try:
        if method == "token":
            payload = token_of(str(auth.data)).split(".")[1]
            claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
            return str(claims["sub"])
        if method == "basic":
            return str(basic_login(str(auth.data))[0])
    except (OSError, IndexError, KeyError, TypeError, ValueError, binascii.Error):
        return None
    return None
