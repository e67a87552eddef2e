"""A local secured Redis: Debian's ``redis-server`` serving TLS only, with an ACL user.

redis-server does both itself (``--tls-port``, ``--aclfile``), so no front is needed: the
plain port is off, the ``default`` user is off, and one user, ``loadgen``, logs in with a
password made at start. The folder holds the certificates (made by openssl unless already
there), the ACL file and a ready driver YAML, those two readable by their owner only.
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from pathlib import Path

import yaml

from loadgen.driver_api.local.certs import Pair, write_private
from loadgen.driver_api.local.process import LocalBroker, claim
from loadgen.driver_api.local.secured import folder_certs, stopped_on_failure
from loadgen_drivers.redis.local.server import Login, launch, require_server

HOST = "127.0.0.1"
DRIVER_NAME = "redis-secure-local"
USER = "loadgen"


def start_secure_redis(
    port: int | None = None,
    log_dir: Path | None = None,
    *,
    detach: bool = False,
    server: Pair | None = None,
) -> LocalBroker:
    """Start redis-server with TLS on ``port`` (a free one by default) and the ACL user
    ``loadgen``; write the driver YAML that reaches it. ``server`` replaces the folder's server
    certificate (an expired one, signed by the folder's CA: make the certificates in
    ``log_dir`` first)."""
    require_server()
    chosen, folder, temporary = claim("redis", port, log_dir, host=HOST)
    with stopped_on_failure(temporary):
        ca, pair = folder_certs(folder, server)
        password = secrets.token_urlsafe(18)
        users = write_private(
            folder / "users.acl", f"user default off\nuser {USER} on >{password} ~* &* +@all\n"
        )
        listener = [
            "--port", "0", "--tls-port", str(chosen), "--tls-cert-file", str(pair.cert),
            "--tls-key-file", str(pair.key), "--tls-ca-cert-file", str(ca),
            "--tls-auth-clients", "no", "--aclfile", str(users),
        ]  # fmt: skip
        section = {
            "redisHost": HOST, "redisPort": chosen, "redisUser": USER, "redisPass": password,
            "tls": {"caFile": str(ca)},
        }  # fmt: skip
        broker = launch(
            chosen, folder, temporary, HOST, listener, section, Login(USER, password, tls=True),
            detach=detach,
        )  # fmt: skip
        driver_file = folder / f"{DRIVER_NAME}.yaml"
        document = {"name": DRIVER_NAME, "driver": "redis", **section}
        write_private(driver_file, yaml.safe_dump(document, sort_keys=False))
    return replace(broker, driver_file=str(driver_file))
