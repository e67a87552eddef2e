"""Fixtures every test folder shares."""

import pytest

from loadgen.testing.certs import CertSet, make_certs, openssl_installed
from loadgen.testing.require import unavailable


@pytest.fixture(scope="session")
def test_certs(tmp_path_factory) -> CertSet:
    """A CA with a server (127.0.0.1, localhost) and a client certificate, made by openssl."""
    if not openssl_installed():
        unavailable("the openssl command is not installed")
    return make_certs(tmp_path_factory.mktemp("certs"))
