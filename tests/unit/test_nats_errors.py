"""What a failed NATS connection amounts to, from the errors nats-py reported (no server)."""

import ssl

import nats.errors
import pytest

from loadgen.base.errors import BrokerLoginRefused, BrokerTlsFailed, BrokerUnreachable
from loadgen_drivers.nats.config import NatsConfig
from loadgen_drivers.nats.connection import failure

CONFIG = NatsConfig(natsHostUrl="nats://alice:secret@127.0.0.1:4222", user="alice")


def test_an_authorization_violation_is_a_refused_login_naming_the_user_not_the_password():
    error = failure(CONFIG, [nats.errors.Error("nats: 'Authorization Violation'"), TimeoutError()])
    assert isinstance(error, BrokerLoginRefused)
    assert "alice" in str(error) and "secret" not in str(error)


def test_a_certificate_the_ca_does_not_vouch_for_is_a_tls_failure():
    refused = ssl.SSLCertVerificationError(1, "certificate verify failed")
    assert isinstance(failure(CONFIG, [refused]), BrokerTlsFailed)


@pytest.mark.parametrize("errors", [[TimeoutError()], [ConnectionResetError(104, "reset")]])
def test_anything_else_is_unreachable_naming_the_masked_address(errors):
    error = failure(CONFIG, errors)
    assert isinstance(error, BrokerUnreachable)
    assert "127.0.0.1:4222" in str(error) and "secret" not in str(error)
