"""Test certificates made with the ``openssl`` command: a CA, a server and a client certificate.

Made by openssl rather than in Python so that what loadgen reads (PEM, PKCS12) comes from the
tool users make theirs with. The server certificate is for ``127.0.0.1`` and ``localhost``.

Every certificate says what it is for, from a configuration of our own (never the system's
``openssl.cnf``), so that OpenSSL's strict checks accept it: those of Python 3.13's default
context (``VERIFY_X509_STRICT``) refuse a CA without keyUsage. The CA may sign only for
``127.0.0.1`` and ``localhost`` (nameConstraints), so whoever imports it trusts nothing else.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from loadgen.base.errors import LocalBrokerError

DAYS = 2
"""Test certificates only live as long as a test session (``make_certs``' default)."""
OPENSSL_CONFIG = """\
[req]
distinguished_name = subject
prompt = no

[subject]

[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
nameConstraints = critical, permitted;IP:127.0.0.1/255.255.255.255, permitted;DNS:localhost

[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid

[client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""
"""The request defaults and, per section, the extensions of the CA, server and client."""


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
    config = folder / "loadgen-openssl.cnf"
    config.write_text(OPENSSL_CONFIG)
    ca = Pair(folder / f"{ca_name}.pem", folder / f"{ca_name}.key")
    _openssl(
        "req", "-x509", "-config", str(config), "-extensions", "ca", "-newkey", "rsa:2048",
        "-nodes", "-days", str(days), "-subj", f"/CN={ca_name}",
        "-keyout", str(_new_key(ca.key)), "-out", str(ca.cert),
    )  # fmt: skip
    server = _signed(folder, ca, "server", config, days)
    client = _signed(folder, ca, "client", config, days)
    return CertSet(folder=folder, ca=ca.cert, server=server, client=client)


def _signed(folder: Path, ca: Pair, name: str, config: Path, days: int) -> Pair:
    """A pair for ``name`` (the section of ``config`` with its extensions), signed by ``ca``."""
    pair = Pair(folder / f"{name}.pem", folder / f"{name}.key")
    request = folder / f"{name}.csr"
    _openssl(
        "req", "-config", str(config), "-newkey", "rsa:2048", "-nodes",
        "-subj", f"/CN=loadgen-{name}", "-keyout", str(_new_key(pair.key)), "-out", str(request),
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", str(request), "-CA", str(ca.cert), "-CAkey", str(ca.key),
        "-CAcreateserial", "-days", str(days), "-extfile", str(config), "-extensions", name,
        "-out", str(pair.cert),
    )  # fmt: skip
    return pair


def _new_key(path: Path) -> Path:
    """``path``, cleared for a new key: openssl creates a key file 0600 but keeps the mode of a
    file that exists."""
    path.unlink(missing_ok=True)
    return path


def serves_until(ca: Path, cert: Path, moment: float) -> bool:
    """Whether ``cert`` still verifies against ``ca`` as a TLS server's at ``moment`` (seconds
    since the epoch), under OpenSSL's strict checks; False for unreadable files."""
    done = subprocess.run(
        ["openssl", "verify", "-x509_strict", "-purpose", "sslserver",
         "-attime", str(int(moment)), "-CAfile", str(ca), str(cert)],
        capture_output=True, timeout=60,
    )  # fmt: skip
    return done.returncode == 0


def write_private(path: Path, data: str | bytes) -> Path:
    """``data`` in a file only its owner can read: it holds a secret. A file that exists is made
    0600 before it gets the data; a symbolic link there is refused, never followed."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "wb") as out:
        os.fchmod(descriptor, 0o600)
        out.write(data.encode() if isinstance(data, str) else data)
    return path


def _openssl(*args: str) -> None:
    done = subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise LocalBrokerError(
            "certificates", f"openssl {args[0]} failed: {done.stderr.strip()[-500:]}"
        )


def expired_server(certs: CertSet, name: str = "expired-server") -> Pair:
    """A server certificate for 127.0.0.1 signed by ``certs``' CA that expired yesterday, with
    the extensions of ``certs.server``: only its dates are wrong.

    Made with ``cryptography``: the ``openssl`` command of Debian 12 (3.0) cannot set a
    certificate's dates in the past."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    ca_cert = x509.load_pem_x509_certificate(certs.ca.read_bytes())
    ca_key = serialization.load_pem_private_key(
        certs.ca.with_suffix(".key").read_bytes(), password=None
    )
    valid = x509.load_pem_x509_certificate(certs.server.cert.read_bytes())
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"loadgen-{name}")]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=3))
        .not_valid_after(now - datetime.timedelta(days=1))
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )
    for extension in valid.extensions:
        if not isinstance(extension.value, x509.SubjectKeyIdentifier):  # the new key has its own
            builder = builder.add_extension(extension.value, extension.critical)
    cert = builder.sign(ca_key, hashes.SHA256())
    pair = Pair(certs.folder / f"{name}.pem", certs.folder / f"{name}.key")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    write_private(
        pair.key,
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        ),
    )
    return pair
