"""Test certificates made with the ``openssl`` command: a CA, a server and a client certificate.

Made by openssl rather than in Python so that what loadgen reads (PEM, PKCS12) comes from the
tool users make theirs with. The server certificate is for ``127.0.0.1`` and ``localhost``.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from loadgen.errors import DriverError

DAYS = "2"
"""Certificates only live as long as a test session."""


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


@dataclass(frozen=True)
class CertSet:
    """A CA and the server and client pairs it signed, all PEM files in ``folder``."""

    folder: Path
    ca: Path
    server: Pair
    client: Pair

    def pkcs12(self, pair: Pair, password: str, name: str) -> Path:
        """``pair`` (with the CA in the chain) as a PKCS12 keystore, like a Java client's."""
        target = self.folder / f"{name}.p12"
        _openssl(
            "pkcs12", "-export", "-in", str(pair.cert), "-inkey", str(pair.key),
            "-certfile", str(self.ca), "-out", str(target), "-passout", f"pass:{password}",
        )  # fmt: skip
        return target

    def truststore(self, password: str, name: str = "truststore") -> Path:
        """The CA alone as a PKCS12 truststore (no key)."""
        target = self.folder / f"{name}.p12"
        _openssl(
            "pkcs12", "-export", "-nokeys", "-in", str(self.ca), "-out", str(target),
            "-passout", f"pass:{password}",
        )  # fmt: skip
        return target


def openssl_installed() -> bool:
    return shutil.which("openssl") is not None


def make_certs(folder: Path, ca_name: str = "loadgen-test-ca") -> CertSet:
    """A fresh CA in ``folder`` and a server (127.0.0.1, localhost) and client certificate."""
    folder.mkdir(parents=True, exist_ok=True)
    ca = Pair(folder / f"{ca_name}.pem", folder / f"{ca_name}.key")
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", DAYS, "-subj", f"/CN={ca_name}",
        "-keyout", str(ca.key), "-out", str(ca.cert),
    )  # fmt: skip
    server = _signed(folder, ca, "server", "subjectAltName=IP:127.0.0.1,DNS:localhost")
    client = _signed(folder, ca, "client", "extendedKeyUsage=clientAuth")
    return CertSet(folder=folder, ca=ca.cert, server=server, client=client)


def _signed(folder: Path, ca: Pair, name: str, extension: str) -> Pair:
    pair = Pair(folder / f"{name}.pem", folder / f"{name}.key")
    request = folder / f"{name}.csr"
    extensions = folder / f"{name}.ext"
    extensions.write_text(extension + "\n")
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN=loadgen-{name}",
        "-keyout", str(pair.key), "-out", str(request),
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", str(request), "-CA", str(ca.cert), "-CAkey", str(ca.key),
        "-CAcreateserial", "-days", DAYS, "-extfile", str(extensions), "-out", str(pair.cert),
    )  # fmt: skip
    return pair


def _openssl(*args: str) -> None:
    done = subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise DriverError("openssl", f"openssl {args[0]} failed: {done.stderr.strip()[-500:]}")
