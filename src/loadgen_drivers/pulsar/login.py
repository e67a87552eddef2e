"""Who a Pulsar client logs in as, for messages: a refused login names the user, never the
secret."""

from __future__ import annotations

import base64
import binascii
import json
from pathlib import Path

from loadgen.base.errors import ConfigError
from loadgen_drivers.pulsar.config import Authentication

AUTH_DATA_PATH = "client.authentication.data"


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


def credentials(auth: Authentication) -> tuple[str, str] | None:
    """The method (``token``, ``basic``) and what a Java or C++ client sends for it (the token,
    or ``user:password``); ``None`` for the other plugins. Data that cannot be read (a token
    file that is missing, basic JSON without ``userId`` and ``password``) is a ConfigError
    naming :data:`AUTH_DATA_PATH`, never the data."""
    method = auth_method(auth)
    try:
        if method == "token":
            return method, token_of(str(auth.data))
        if method == "basic":
            return method, ":".join(basic_login(str(auth.data)))
    except KeyError as missing:
        raise ConfigError(f"the basic login has no {missing} field", path=AUTH_DATA_PATH) from None
    except (OSError, TypeError, ValueError) as error:  # their texts quote no data
        raise ConfigError(
            f"the {method} login cannot be read: {error}", path=AUTH_DATA_PATH
        ) from None
    return None


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
