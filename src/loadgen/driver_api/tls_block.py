"""A driver file's ``tls`` block in loadgen's own names, for drivers whose broker has none of
its own to follow (Redis, RabbitMQ Streams): the CA, an optional client certificate, and how
strictly the server's certificate is checked."""

from __future__ import annotations

import ssl
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from loadgen.base.tls_check import client_context


class TlsBlock(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    ca_file: str | None = Field(default=None, alias="caFile")
    """CA bundle (PEM) the server's certificate must chain to; unset: the system's CAs."""
    cert_file: str | None = Field(default=None, alias="certFile")
    """Client certificate (PEM) for servers that check one; unset: none."""
    key_file: str | None = Field(default=None, alias="keyFile")
    """The client certificate's private key (PEM); unset: read from ``certFile``."""
    verify: bool = True
    """Check the server's certificate; false: no check at all."""
    check_hostname: bool = Field(default=True, alias="checkHostname")
    """Check that the certificate names the host connected to."""

    def context(self) -> ssl.SSLContext:
        """The client context; ``OSError``/``ssl.SSLError`` for files that do not load."""
        for path in (self.ca_file, self.cert_file, self.key_file):
            if path and not Path(path).is_file():
                raise FileNotFoundError(f"{path}: no such file")
        context = client_context(cafile=self.ca_file)
        if self.cert_file:
            context.load_cert_chain(self.cert_file, self.key_file)
        if not self.verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif not self.check_hostname:
            context.check_hostname = False
        return context
