"""Test certificates made with the ``openssl`` command: a CA, a server and a client certificate.

Made by openssl rather than in Python so that what loadgen reads (PEM, PKCS12) comes from the
tool users make theirs with. The server certificate is for ``127.0.0.1`` and ``localhost``.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from loadgen.base.errors import LocalBrokerError

DAYS = 2
"""Test certificates only live as long as a test session (``make_certs``' default)."""


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


def make_certs(folder: Path, ca_name: str = "loadgen-test-ca", days: int = DAYS) -> CertSet:
    """A fresh CA in ``folder`` and a server (127.0.0.1, localhost) and client certificate."""
    folder.mkdir(parents=True, exist_ok=True)
    ca = Pair(folder / f"{ca_name}.pem", folder / f"{ca_name}.key")
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", str(days),
        "-subj", f"/CN={ca_name}", "-keyout", str(ca.key), "-out", str(ca.cert),
    )  # fmt: skip
    server = _signed(folder, ca, "server", "subjectAltName=IP:127.0.0.1,DNS:localhost", days)
    client = _signed(folder, ca, "client", "extendedKeyUsage=clientAuth", days)
    return CertSet(folder=folder, ca=ca.cert, server=server, client=client)


def _signed(folder: Path, ca: Pair, name: str, extension: str, days: int) -> Pair:
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
        "-CAcreateserial", "-days", str(days), "-extfile", str(extensions), "-out", str(pair.cert),
    )  # fmt: skip
    return pair


def _openssl(*args: str) -> None:
    done = subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise LocalBrokerError(
            "certificates", f"openssl {args[0]} failed: {done.stderr.strip()[-500:]}"
        )


def expired_server(certs: CertSet, name: str = "expired-server") -> Pair:
    """A server certificate for 127.0.0.1 signed by ``certs``' CA that expired yesterday.

    Made with ``cryptography``: the ``openssl`` command of Debian 12 (3.0) cannot set a
    certificate's dates in the past."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    ca_cert = x509.load_pem_x509_certificate(certs.ca.read_bytes())
    ca_key = serialization.load_pem_private_key(
        certs.ca.with_suffix(".key").read_bytes(), password=None
    )
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"loadgen-{name}")]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=3))
        .not_valid_after(now - datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pair = Pair(certs.folder / f"{name}.pem", certs.folder / f"{name}.key")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pair.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    return pair
