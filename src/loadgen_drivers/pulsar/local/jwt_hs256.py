"""Pulsar's token authentication in its simplest form: a JWT signed with HS256 and a secret key.

A Pulsar broker's ``AuthenticationProviderToken`` with ``tokenSecretKey`` checks the same: the
signature, ``exp`` and ``nbf`` when present (numbers of seconds, as jjwt reads them, with no
clock skew allowed), and takes ``sub`` as the client's role. The secret is raw bytes, as in the
file Pulsar's ``tokenSecretKey=file:///...`` reads. Each part must be canonical base64url, so
one token has one spelling.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import secrets
import time

SECRET_BYTES = 32
"""256 bits: the size of HS256's hash, as ``pulsar tokens create-secret-key`` makes them."""
_HEADER = {"alg": "HS256", "typ": "JWT"}


class TokenError(ValueError):
    """A token that does not authenticate; ``subject`` is its ``sub`` where it could be read."""

    def __init__(self, reason: str, subject: str | None = None) -> None:
        super().__init__(reason)
        self.subject = subject


def new_secret() -> bytes:
    return secrets.token_bytes(SECRET_BYTES)


def make_token(subject: str, secret: bytes, expires_at: float | None = None) -> str:
    """A token for ``subject`` signed with ``secret``; without ``expires_at`` it never expires."""
    claims: dict[str, object] = {"sub": subject}
    if expires_at is not None:
        claims["exp"] = int(expires_at)
    signed = f"{_encode_json(_HEADER)}.{_encode_json(claims)}"
    return f"{signed}.{_b64encode(_signature(signed, secret))}"


def verify_token(token: str, secret: bytes, now: float | None = None) -> str:
    """The subject of ``token`` if ``secret`` signed it and it is valid now; else TokenError."""
    parts = token.split(".")
    if len(parts) != 3:
        raise TokenError("not a JWT (header.claims.signature)")
    header_bytes, claims_bytes, signature = (_b64decode(part) for part in parts)
    header, claims = _decode_json(header_bytes), _decode_json(claims_bytes)
    subject = claims.get("sub") if isinstance(claims, dict) else None
    subject = subject if isinstance(subject, str) else None
    if not isinstance(header, dict) or header.get("alg") != "HS256":
        raise TokenError("the token is not signed with HS256", subject)
    expected = _signature(f"{parts[0]}.{parts[1]}", secret)
    if not hmac.compare_digest(expected, signature):
        raise TokenError("the token's signature does not match", subject)
    if not isinstance(claims, dict) or subject is None:
        raise TokenError("the token names no subject (sub)")
    _check_times(claims, _now(now), subject)
    return subject


def _check_times(claims: dict[str, object], now: float, subject: str) -> None:
    """``exp`` and ``nbf``, when present, must be finite numbers with ``nbf <= now < exp``."""
    expiry, not_before = _time(claims, "exp", subject), _time(claims, "nbf", subject)
    if expiry is not None and expiry <= now:
        raise TokenError("the token has expired", subject)
    if not_before is not None and now < not_before:
        raise TokenError("the token is not valid yet (nbf)", subject)


def _time(claims: dict[str, object], name: str, subject: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TokenError(f"the token's {name} is not a finite number of seconds", subject)
    return value


def _now(now: float | None) -> float:
    return time.time() if now is None else now


def _signature(signed: str, secret: bytes) -> bytes:
    return hmac.new(secret, signed.encode("ascii"), hashlib.sha256).digest()


def _encode_json(value: dict[str, object]) -> str:
    return _b64encode(json.dumps(value, separators=(",", ":")).encode())


def _decode_json(data: bytes) -> object:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64decode(part: str) -> bytes:
    """base64url without padding, as JWT writes it; TokenError unless ``part`` is the one
    canonical spelling of its bytes (no other characters, no padding, unused bits zero)."""
    try:
        data = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except ValueError:
        data = None
    if data is None or _b64encode(data) != part:
        raise TokenError("a part of the token is not base64url")
    return data
