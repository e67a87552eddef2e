"""A failed TLS handshake, told apart at once from an unreachable broker.

Broker clients report a certificate they do not trust like any other failed connection and
retry it until their deadline (pulsar-client says only "connect error"). One handshake made
here with the same trust settings says why, in milliseconds: not signed by the CA given,
expired, or issued for another host. Drivers outside loadgen use it through
:mod:`loadgen.driver_api`, which re-exports it and :func:`client_context`.
"""

from __future__ import annotations

import socket
import ssl

from loadgen.base.refusal import REFUSAL_WAIT_S, Address


def client_context(
    cafile: str | None = None, capath: str | None = None, cadata: str | None = None
) -> ssl.SSLContext:
    """Python's default client context without the strict X.509 checks it makes from Python
    3.13 on (``VERIFY_X509_STRICT``, which refuses a CA without keyUsage): librdkafka,
    pulsar-client and Java do not make them, and a check that names a failure must accept what
    the client accepts."""
    context = ssl.create_default_context(cafile=cafile, capath=capath, cadata=cadata)
    context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return context


def tls_verify_problem(
    address: Address, context: ssl.SSLContext, timeout_s: float = REFUSAL_WAIT_S
) -> str | None:
    """Why ``address``'s certificate fails verification under ``context``, or ``None``: it
    verified, or no handshake could be had (refused, silent, not TLS), which is the
    reachability check's to report."""
    host, port = address
    try:
        with (
            socket.create_connection((host, port), timeout=timeout_s) as raw,
            context.wrap_socket(raw, server_hostname=host),
        ):
            return None
    except ssl.SSLCertVerificationError as error:
        return f"certificate verify failed: {error.verify_message}"
    except (OSError, ValueError):  # includes ssl.SSLError: not a verification failure
        return None
