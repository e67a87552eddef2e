"""The server side of SCRAM (RFC 5802), with SHA-256 and SHA-512 (RFC 7677), for Kafka's SASL.

Kept apart from any socket so that it can be checked against the RFC's example exchange. A
Kafka client runs it in two steps: client-first → server-first, client-final → server-final.
Passwords are used as their UTF-8 bytes without SASLprep, as Kafka's own brokers do. An unknown
user is not told apart from a wrong password: the exchange goes on with a decoy salt (the same
one for the same name) and fails at the proof, like a wrong password does. Refused, as Kafka
refuses them: the reserved ``m=`` attribute (RFC 5802 §5.1), a saslname with an ``=`` that is
not ``=2C`` or ``=3D``, and ``tokenauth=true`` (a delegation-token login; this server has no
tokens, so checking it as a password would let a token client pass where Kafka refuses it).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass

HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS = 4096
"""Kafka's minimum (and RFC 7677's example)."""
_DECOY_KEY = secrets.token_bytes(32)
_SASLNAME = re.compile(r"(?:[^=,]|=2C|=3D)+")
"""RFC 5802's saslname: no raw ``,``, and ``=`` only in the two escapes."""


class ScramError(Exception):
    """A failed exchange; ``username`` is who tried (None before it was read), never a secret."""

    def __init__(self, reason: str, username: str | None = None) -> None:
        super().__init__(reason)
        self.username = username


@dataclass(frozen=True)
class Credential:
    """What a server stores for a user (RFC 5802 §3): never the password itself."""

    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes


def make_credential(
    mechanism: str, password: str, salt: bytes | None = None, iterations: int = MIN_ITERATIONS
) -> Credential:
    """The stored form of ``password`` for ``mechanism`` (a random 16-byte salt by default)."""
    digest = HASHES[mechanism]
    salt = salt if salt is not None else secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)
    client_key = _hmac(digest, salted, b"Client Key")
    return Credential(
        salt=salt,
        iterations=iterations,
        stored_key=hashlib.new(digest, client_key).digest(),
        server_key=_hmac(digest, salted, b"Server Key"),
    )


class ScramServer:
    """One exchange. ``lookup`` gives a user's credential for this mechanism, or None."""

    def __init__(
        self,
        mechanism: str,
        lookup: Callable[[str], Credential | None],
        server_nonce: str | None = None,
    ) -> None:
        self.digest = HASHES[mechanism]
        self.lookup = lookup
        self.server_nonce = server_nonce or secrets.token_urlsafe(18)
        self.username: str | None = None
        self._credential: Credential | None = None
        self._known = False
        self._client_first_bare = ""
        self._server_first = ""
        self._gs2_header = ""
        self._nonce = ""

    def first(self, client_first: bytes) -> bytes:
        """client-first-message → server-first-message (nonce, salt, iterations)."""
        text = _decode(client_first, None)
        header, separator, bare = _split_gs2(text)
        if not separator:
            raise ScramError("malformed client-first-message")
        attributes = _attributes(bare, None)
        if "n" not in attributes or "r" not in attributes:
            raise ScramError("client-first-message lacks n= or r=")
        self.username = _unescape(attributes["n"])
        if header.startswith("p="):
            raise ScramError("channel binding is not supported", self.username)
        if attributes.get("tokenauth", "").lower() == "true":
            raise ScramError("delegation tokens are not supported", self.username)
        authzid = header.split(",")[1]
        if authzid and (not authzid.startswith("a=") or _unescape(authzid[2:]) != self.username):
            raise ScramError("authorization id differs from the user", self.username)
        credential = self.lookup(self.username)
        self._known = credential is not None
        self._credential = credential or self._decoy(self.username)
        self._gs2_header = header
        self._client_first_bare = bare
        self._nonce = attributes["r"] + self.server_nonce
        salt = base64.b64encode(self._credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={self._credential.iterations}"
        return self._server_first.encode()

    def final(self, client_final: bytes) -> bytes:
        """client-final-message → server-final-message (``v=`` the server signature).

        Raises :class:`ScramError` on a wrong proof, nonce or channel binding."""
        if self._credential is None:
            raise ScramError("client-final-message before client-first-message")
        text = _decode(client_final, self.username)
        without_proof, _, proof_part = text.rpartition(",p=")
        attributes = _attributes(without_proof, self.username)
        expected_binding = base64.b64encode(self._gs2_header.encode()).decode()
        if attributes.get("c") != expected_binding or attributes.get("r") != self._nonce:
            raise ScramError("channel binding or nonce does not match", self.username)
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except ValueError:
            raise ScramError("malformed proof", self.username) from None
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = _hmac(self.digest, self._credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramError("invalid username or password", self.username)
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        stored = hashlib.new(self.digest, client_key).digest()
        if not (hmac.compare_digest(stored, self._credential.stored_key) and self._known):
            raise ScramError("invalid username or password", self.username)
        server_signature = _hmac(self.digest, self._credential.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)

    def _decoy(self, username: str) -> Credential:
        """A credential no password opens; its salt is stable per name within this process."""
        salt = hmac.new(_DECOY_KEY, username.encode(), "sha256").digest()[:16]
        size = hashlib.new(self.digest).digest_size
        return Credential(salt, MIN_ITERATIONS, secrets.token_bytes(size), b"")


def _hmac(digest: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, digest).digest()


def _decode(message: bytes, username: str | None) -> str:
    try:
        return message.decode()
    except UnicodeDecodeError:
        raise ScramError("message is not UTF-8", username) from None


def _split_gs2(text: str) -> tuple[str, bool, str]:
    """``gs2-header`` (``n,,`` / ``y,,`` / ``p=...,`` with an optional ``a=``) and the rest."""
    flag, comma, rest = text.partition(",")
    authzid, comma2, bare = rest.partition(",")
    well_formed = bool(comma and comma2) and (flag in ("n", "y") or flag.startswith("p="))
    return f"{flag},{authzid},", well_formed, bare


def _attributes(text: str, username: str | None) -> dict[str, str]:
    """``a=1,b=2`` as a dict; extensions (Kafka's ``tokenauth``) are kept for the caller."""
    attributes = {}
    for part in text.split(","):
        key, equals, value = part.partition("=")
        if not equals or not key:
            raise ScramError("malformed attribute", username)
        if key == "m":
            raise ScramError("the reserved attribute m= is not supported", username)
        attributes.setdefault(key, value)
    return attributes


def _unescape(name: str) -> str:
    """RFC 5802's saslname: ``=2C`` is ``,`` and ``=3D`` is ``=``; anything else is refused."""
    if not _SASLNAME.fullmatch(name):
        raise ScramError("malformed user name")
    return name.replace("=2C", ",").replace("=3D", "=")
