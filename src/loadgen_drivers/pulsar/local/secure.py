"""A local secured Pulsar endpoint: pulsar-lite behind TLS and token authentication.

pulsar-lite serves neither, so :mod:`loadgen_drivers.pulsar.local.front` (a process of its own) does
both on the port clients are given, and pulsar-lite listens on another free port that no client
is told of. The folder holds the certificates (made by openssl unless already there), the token
secret, both logs and a ready driver YAML whose token and trust file are the endpoint's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from loadgen.driver_api.local.certs import Pair, write_private
from loadgen.driver_api.local.process import LocalBroker, claim, stop_process
from loadgen.driver_api.local.secured import (
    STOP_TIMEOUT_S,
    await_front,
    folder_certs,
    start_front,
    stopped_on_failure,
)
from loadgen_drivers.pulsar.local.jwt_hs256 import make_token, new_secret
from loadgen_drivers.pulsar.local.lite import (
    PULSAR_LITE_CLIENT_SETTINGS,
    pulsar_lite_binary,
    start_pulsar_lite,
)

HOST = "127.0.0.1"
DRIVER_NAME = "pulsar-secure-local"
TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
SECRET_FILE = "pulsar-token-secret.key"


def start_secure_pulsar(
    port: int | None = None,
    log_dir: Path | None = None,
    *,
    detach: bool = False,
    server: Pair | None = None,
    subject: str = "loadgen",
) -> LocalBroker:
    """Start pulsar-lite and the TLS + token front on ``port`` (a free one by default), wait
    until the front completes TLS handshakes, and write the driver YAML that reaches it.

    ``server`` replaces the folder's server certificate (an expired one, signed by the folder's
    CA: make the certificates in ``log_dir`` first); the driver YAML trusts the folder's CA and
    carries a token for ``subject``. ``detach`` starts both processes in their own sessions
    (``loadgen brokers up``).
    """
    pulsar_lite_binary()  # MissingExtra before anything is made
    chosen, folder, temporary = claim("pulsar", port, log_dir, host=HOST)
    with stopped_on_failure(temporary) as undo:
        ca, pair = folder_certs(folder, server)
        secret_file = write_private(folder / SECRET_FILE, secret := new_secret())
        lite = start_pulsar_lite(data_dir=folder, detach=detach, host=HOST)
        undo.callback(lite.stop, STOP_TIMEOUT_S)
        address = f"{HOST}:{chosen}"
        log_path = folder / f"pulsar-front-{chosen}.log"
        arguments = [
            "--listen", address, "--upstream", lite.address,
            "--cert", str(pair.cert), "--key", str(pair.key), "--secret-file", str(secret_file),
        ]  # fmt: skip
        front = start_front(
            "loadgen_drivers.pulsar.local.front", arguments, log_path, detach=detach
        )
        undo.callback(stop_process, front.pid, STOP_TIMEOUT_S)
        section = secure_driver_config(address, ca, make_token(subject, secret))
        driver_file = folder / f"{DRIVER_NAME}.yaml"
        broker = LocalBroker(
            "pulsar",
            address,
            front.pid,
            str(log_path),
            section,
            temporary,
            helper_pids=[lite.pid],
            driver_file=str(driver_file),
        )
        await_front(front, broker)
        document = {"name": DRIVER_NAME, "driver": "pulsar", **section}
        write_private(driver_file, yaml.safe_dump(document, sort_keys=False))
    return broker


def secure_driver_config(address: str, ca: Path, token: str) -> dict[str, Any]:
    """A Pulsar driver section for the front on ``address``, with pulsar-lite's settings."""
    settings = PULSAR_LITE_CLIENT_SETTINGS
    client = {
        **settings["client"],
        "serviceUrl": f"pulsar+ssl://{address}",
        "tlsTrustCertsFilePath": str(ca),
        "tlsEnableHostnameVerification": True,
        "authentication": {"plugin": TOKEN_PLUGIN, "data": f"token:{token}"},
    }
    return {**settings, "client": client}
