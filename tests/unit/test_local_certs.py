"""The local endpoints' certificates and secret files: valid under Python 3.13's strict checks,
limited to 127.0.0.1 and localhost, renewed before they expire, and readable by their owner only."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loadgen.driver_api.local.certs import (
    expired_server,
    make_certs,
    openssl_installed,
    serves_until,
    write_private,
)
from loadgen.driver_api.local.secured import CA_NAME, RENEW_DAYS, folder_certs
from loadgen.pytest_plugin.require import unavailable

DAY_S = 86400
HANDSHAKES = """
import socket, ssl, sys, threading

ca, cert, key, client_cert, client_key = sys.argv[1:]
if sys.version_info >= (3, 13):  # its default contexts check strictly: the point of this run
    assert ssl.create_default_context().verify_flags & ssl.VERIFY_X509_STRICT
server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=ca)
server.load_cert_chain(cert, key)
server.verify_mode = ssl.CERT_REQUIRED
client = ssl.create_default_context(cafile=ca)
client.load_cert_chain(client_cert, client_key)
for context in (server, client):
    context.verify_flags |= ssl.VERIFY_X509_STRICT
listener = socket.create_server(("127.0.0.1", 0))
listener.settimeout(10)
refused = []

def serve():
    for _ in range(2):
        connection, _ = listener.accept()
        try:
            with server.wrap_socket(connection, server_side=True) as tls:
                tls.recv(1)
        except OSError as error:
            refused.append(error)

thread = threading.Thread(target=serve, daemon=True)
thread.start()
for name in ("127.0.0.1", "localhost"):
    with socket.create_connection(listener.getsockname(), timeout=5) as raw:
        with client.wrap_socket(raw, server_hostname=name) as tls:
            tls.sendall(b"x")
thread.join(10)
assert not refused, refused
print("verified")
"""
"""Both sides of a mutual-TLS handshake with Python's default contexts and strict checks, to
127.0.0.1 and localhost; only the standard library, so any interpreter can run it."""


@pytest.fixture(autouse=True)
def openssl() -> None:
    if not openssl_installed():
        unavailable("the openssl command is not installed")


def python_313() -> str | None:
    """A python3.13 that runs: on the PATH, or one pyenv installed (its shim on the PATH fails
    unless 3.13 is the selected version)."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    found = [
        shutil.which("python3.13"),
        *map(str, sorted(pyenv.glob("versions/3.13*/bin/python3.13"))),
    ]
    for candidate in filter(None, found):
        if subprocess.run([candidate, "-c", "import ssl"], capture_output=True).returncode == 0:
            return candidate
    return None


@pytest.mark.parametrize("python", ["this", "3.13"])
def test_the_certificates_pass_pythons_strict_checks_on_both_sides(python, tmp_path):
    interpreter = sys.executable if python == "this" else python_313()
    if interpreter is None:
        pytest.skip("no python3.13 on this machine")
    certs = make_certs(tmp_path)
    files = [certs.ca, certs.server.cert, certs.server.key, certs.client.cert, certs.client.key]
    done = subprocess.run(
        [interpreter, "-c", HANDSHAKES, *map(str, files)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "verified" in done.stdout, done.stderr[-2000:]


def test_an_expired_certificate_differs_from_the_valid_one_only_in_its_dates(tmp_path):
    certs = make_certs(tmp_path)
    expired = expired_server(certs)
    assert serves_until(certs.ca, certs.server.cert, time.time())
    assert not serves_until(certs.ca, expired.cert, time.time())
    assert extensions(expired.cert) == extensions(certs.server.cert)
    assert stat.S_IMODE(expired.key.stat().st_mode) == 0o600


def extensions(cert: Path) -> dict[str, object]:
    """A certificate's extensions by name, but its key's own identifier."""
    from cryptography import x509

    loaded = x509.load_pem_x509_certificate(cert.read_bytes())
    return {
        extension.oid.dotted_string: (extension.critical, extension.value)
        for extension in loaded.extensions
        if not isinstance(extension.value, x509.SubjectKeyIdentifier)
    }


def test_the_ca_signs_for_127_0_0_1_and_localhost_only(tmp_path):
    certs = make_certs(tmp_path)
    ca_key = certs.ca.with_suffix(".key")
    request, elsewhere = tmp_path / "elsewhere.csr", tmp_path / "elsewhere.pem"
    (tmp_path / "elsewhere.ext").write_text("subjectAltName = DNS:example.com\n")
    subprocess.run(
        ["openssl", "req", "-new", "-key", str(certs.server.key), "-subj", "/CN=example.com",
         "-out", str(request)],
        check=True, capture_output=True,
    )  # fmt: skip
    subprocess.run(
        ["openssl", "x509", "-req", "-in", str(request), "-CA", str(certs.ca), "-CAkey",
         str(ca_key), "-CAcreateserial", "-days", "1", "-extfile", str(tmp_path / "elsewhere.ext"),
         "-out", str(elsewhere)],
        check=True, capture_output=True,
    )  # fmt: skip
    assert not serves_until(certs.ca, elsewhere, time.time())


def test_keys_are_the_owners_only_even_where_an_older_key_was_readable(tmp_path):
    tmp_path.joinpath("server.key").write_text("old")
    tmp_path.joinpath("server.key").chmod(0o644)
    certs = make_certs(tmp_path)
    for key in (certs.ca.with_suffix(".key"), certs.server.key, certs.client.key):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600, key


def test_an_endpoints_certificates_are_made_anew_within_the_renewal_window(tmp_path):
    make_certs(tmp_path, CA_NAME, days=RENEW_DAYS - 1)
    old = (tmp_path / f"{CA_NAME}.pem").read_bytes()
    ca, server = folder_certs(tmp_path)
    renewed = ca.read_bytes()
    assert renewed != old
    assert serves_until(ca, server.cert, time.time() + RENEW_DAYS * DAY_S)
    assert folder_certs(tmp_path) == (ca, server) and ca.read_bytes() == renewed  # kept now


def test_the_ca_of_a_server_certificate_given_is_kept_whatever_its_expiry(tmp_path):
    certs = make_certs(tmp_path, CA_NAME)  # a test session's two days
    made = certs.ca.read_bytes()
    expired = expired_server(certs)
    assert folder_certs(tmp_path, expired) == (certs.ca, expired)
    assert certs.ca.read_bytes() == made


def test_a_private_file_that_exists_readable_is_made_the_owners_only(tmp_path):
    path = tmp_path / "users.json"
    path.write_text("{}")
    path.chmod(0o644)
    write_private(path, "secret")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.read_text() == "secret"


def test_a_private_file_is_never_written_through_a_symbolic_link(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("kept")
    (tmp_path / "users.json").symlink_to(target)
    with pytest.raises(OSError):
        write_private(tmp_path / "users.json", "secret")
    assert target.read_text() == "kept"
