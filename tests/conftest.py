"""Fixtures every test folder shares."""

import os
import tempfile
from pathlib import Path

import pytest

from harness.podman_image import image, podman
from harness.timing import SilentPort, start_up_seconds
from loadgen.driver_api.local.certs import CertSet, make_certs, openssl_installed
from loadgen.pytest_plugin.require import unavailable

__all__ = ["image", "podman"]
"""The image tests' fixtures (:mod:`harness.podman_image`), here so that one build serves every
folder that asks for it."""

os.environ["LOADGEN_CALIBRATION"] = str(Path(tempfile.gettempdir()) / "loadgen-tests-uncalibrated")
"""The tests see the calibration shipped with loadgen, never a developer's own
(``~/.config/loadgen/calibration.json``), in this process and every one it starts."""


@pytest.fixture(scope="session")
def test_certs(tmp_path_factory) -> CertSet:
    """A CA with a server (127.0.0.1, localhost) and a client certificate, made by openssl."""
    if not openssl_installed():
        unavailable("the openssl command is not installed")
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def start_up() -> float:
    """The bound for CPU-bound steps after a deadline or a signal (killing a child, answering,
    stopping, writing a result; ~0.1-1 s on an idle machine): less work than starting loadgen,
    measured now beside whatever else runs (a control, not an idle machine's seconds)."""
    return start_up_seconds()


@pytest.fixture
def silent():
    """A port that accepts connections, never answers, and notes the first request."""
    with SilentPort() as port:
        yield port
