"""Apache Pulsar itself on this host: ``loadgen brokers up pulsar --upstream [--secure]``.

Pulsar's own standalone (``PulsarStandaloneStarter``): a broker, three bookies and a RocksDB
metadata store in one JVM, every listener on the host given. Three bookies, so OMB's
``pulsar.yaml`` (ensemble 3, write quorum 3, ack quorum 2) runs as it is; its cluster is named
``local``, as that file's ``clusterName`` says. ``secure`` serves TLS only (Pulsar's own
listeners) and checks tokens with Pulsar's ``AuthenticationProviderToken`` and a new HS256
key; the token (its subject a superuser, so a run can make its tenant and namespaces) is in
the printed driver file only its owner can read, never on a command line or in the log.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from loadgen.base.errors import LocalBrokerSetupError
from loadgen.driver_api.local.certs import write_private
from loadgen.driver_api.local.java import ServerJars, java_binary, log4j2_properties
from loadgen.driver_api.local.process import (
    LocalBroker,
    claim,
    free_port,
    spawn_logged,
    stop_processes,
)
from loadgen.driver_api.local.secured import folder_certs, stopped_on_failure
from loadgen.driver_api.local.server_start import await_serving
from loadgen_drivers.pulsar.admin import auth_headers, ssl_context
from loadgen_drivers.pulsar.config import ClientConfig
from loadgen_drivers.pulsar.local.distribution import pulsar_distribution
from loadgen_drivers.pulsar.local.jwt_hs256 import make_token, new_secret

DRIVER_NAME = "pulsar-upstream-local"
MAIN_CLASS = "org.apache.pulsar.PulsarStandaloneStarter"
CLUSTER = "local"
BOOKIES = 3
USER = "loadgen"
TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
READY_TIMEOUT_S = 90.0
"""Until the admin REST lists ``public/default``: 4-5 s on 2 cores (three bookies, then the
broker, then the namespaces standalone makes), longer beside a loaded suite."""
FIRST_START_NOISE = ("lastMark",)
"""BookKeeper's ERROR line on a bookie's first start (no journal mark yet): not why it failed."""
STOP_TIMEOUT_S = 20.0
"""The broker closes its topics and the bookies flush their journals."""
JVM_OPTIONS = (
    "-Xms512m",
    "-Xmx1g",
    "-XX:MaxDirectMemorySize=1g",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=10",
    "-XX:+ExitOnOutOfMemoryError",
    "-Dio.netty.leakDetectionLevel=disabled",
    "-Djava.awt.headless=true",
)
"""Pulsar's own G1 settings with a 1 GiB heap and 1 GiB of direct memory (its scripts take
2 and 4 GiB): the broker's entry cache and the bookies' write caches fit, beside clients on a
24 GiB host."""
CLIENT_SETTINGS: dict[str, Any] = {
    "client": {"clusterName": CLUSTER},
    "producer": {"batchingEnabled": True, "batchingMaxPublishDelayMs": 1},
    "consumer": {"subscriptionType": "Failover", "receiverQueueSize": 10000},
}
"""OMB's ``pulsar.yaml`` settings; Apache Pulsar needs none of pulsar-lite's."""


@dataclass(frozen=True)
class Listeners:
    """The ports the standalone serves clients on, plain or TLS as it is secured."""

    host: str
    service_port: int
    web_port: int
    secure: bool

    @property
    def service_url(self) -> str:
        return f"pulsar{'+ssl' * self.secure}://{self.host}:{self.service_port}"

    @property
    def admin_url(self) -> str:
        return f"http{'s' * self.secure}://{self.host}:{self.web_port}"


def start_upstream_pulsar(
    port: int | None = None,
    log_dir: Path | None = None,
    *,
    detach: bool = False,
    secure: bool = False,
    host: str = "127.0.0.1",
    keep_data: bool = False,
) -> LocalBroker:
    """Start Apache Pulsar standalone with its service port on ``host``:``port`` (a free one by
    default, the admin REST on another) and return once its admin REST lists the default
    namespace. The data is new, earlier data in a ``log_dir`` given removed, unless
    ``keep_data``: a restart of the standalone that stopped on this port and ``log_dir``, on
    the configuration, data and driver file it left. ``detach`` starts it in its own session
    so it outlives this process (``loadgen brokers up``). A failure stops it and names its
    log."""
    java = java_binary("pulsar")
    jars = pulsar_distribution()
    chosen, folder, temporary = claim("pulsar", port, log_dir, host=host)
    with stopped_on_failure(temporary) as undo:
        if keep_data:
            listeners, config = _written(folder, host, chosen)
        else:
            listeners = Listeners(host, chosen, free_port(host), secure)
            config = _prepare(folder, listeners, jars)
        process = spawn_logged(
            _command(java, folder, keep_data), folder / "stdout.log", detach=detach
        )
        undo.callback(stop_processes, [process.pid], STOP_TIMEOUT_S)
        broker = LocalBroker(
            kind="pulsar",
            address=f"{host}:{chosen}",
            pid=process.pid,
            log_path=str(_log(folder)),
            driver_config=config,
            temporary_dir=temporary,
            driver_file=str(folder / f"{DRIVER_NAME}.yaml"),
            server=f"Apache Pulsar {jars.version}",
            endpoints={"service URL": listeners.service_url, "admin URL": listeners.admin_url},
        )
        _await_ready(process, listeners, folder, config)
        return broker


def start_secured_upstream_pulsar(
    port: int | None = None, log_dir: Path | None = None, **options: Any
) -> LocalBroker:
    """:func:`start_upstream_pulsar` with Pulsar's own TLS listeners and token login."""
    return start_upstream_pulsar(port, log_dir, secure=True, **options)


def _prepare(folder: Path, listeners: Listeners, jars: ServerJars) -> dict[str, Any]:
    """The standalone's configuration, log settings, classpath and driver file, written into
    ``folder`` (its earlier data removed); the driver section."""
    shutil.rmtree(folder / "data", ignore_errors=True)
    lines = _standalone_conf(listeners)
    client = {
        "serviceUrl": listeners.service_url,
        "httpUrl": listeners.admin_url,
        **CLIENT_SETTINGS["client"],
    }
    if listeners.secure:
        ca, token = _secured(folder, lines)
        client.update(
            tlsTrustCertsFilePath=str(ca),
            tlsEnableHostnameVerification=True,
            authentication={"plugin": TOKEN_PLUGIN, "data": f"token:{token}"},
        )
    config = {**CLIENT_SETTINGS, "client": client}
    write_private(folder / "standalone.conf", "".join(f"{line}\n" for line in lines))
    (folder / "log4j2.properties").write_text(log4j2_properties(_log(folder)))
    (folder / "classpath.args").write_text(f"-cp {jars.classpath_text}\n")
    document = {"name": DRIVER_NAME, "driver": "pulsar", **config}
    write_private(folder / f"{DRIVER_NAME}.yaml", yaml.safe_dump(document, sort_keys=False))
    return config


def _written(folder: Path, host: str, port: int) -> tuple[Listeners, dict[str, Any]]:
    """The listeners and driver section of the standalone that stopped in ``folder``, to start
    it again on them."""
    driver_file = folder / f"{DRIVER_NAME}.yaml"
    if not (folder / "standalone.conf").exists() or not driver_file.exists():
        raise LocalBrokerSetupError("pulsar", f"no Apache Pulsar standalone to restart in {folder}")
    document = yaml.safe_load(driver_file.read_text())
    config = {key: value for key, value in document.items() if key not in ("name", "driver")}
    service = config["client"]["serviceUrl"]
    if not service.endswith(f"//{host}:{port}"):
        raise LocalBrokerSetupError(
            "pulsar", f"the standalone in {folder} serves {service}, not {host}:{port}"
        )
    admin = config["client"]["httpUrl"]
    listeners = Listeners(host, port, int(admin.rsplit(":", 1)[1]), admin.startswith("https"))
    return listeners, config


def _standalone_conf(listeners: Listeners) -> list[str]:
    """Broker and bookie settings (standalone reads both from one file)."""
    ports = (
        [
            f"brokerServicePortTls={listeners.service_port}",
            f"webServicePortTls={listeners.web_port}",
            "brokerServicePort=",
            "webServicePort=",
        ]
        if listeners.secure
        else [f"brokerServicePort={listeners.service_port}", f"webServicePort={listeners.web_port}"]
    )
    return [
        f"clusterName={CLUSTER}",
        f"bindAddress={listeners.host}",
        f"advertisedAddress={listeners.host}",
        *ports,
        # bookies listen on the loopback interface only, not on every address
        "listeningInterface=lo",
        "managedLedgerDefaultEnsembleSize=1",
        "managedLedgerDefaultWriteQuorum=1",
        "managedLedgerDefaultAckQuorum=1",
        "dbStorage_writeCacheMaxSizeMb=32",
        "dbStorage_readAheadCacheMaxSizeMb=32",
        "transactionCoordinatorEnabled=true",
        "brokerDeleteInactiveTopicsEnabled=false",
    ]


def _secured(folder: Path, lines: list[str]) -> tuple[Path, str]:
    """Pulsar's TLS and token settings added to ``lines``, the key and the broker's own token
    in files only their owner can read; the CA clients trust and their token."""
    ca, server = folder_certs(folder)
    secret = write_private(folder / "token-secret.key", new_secret())
    token = make_token(USER, secret.read_bytes())
    own_token = write_private(folder / "broker-client.token", token)
    lines += [
        f"tlsCertificateFilePath={server.cert}",
        f"tlsKeyFilePath={server.key}",
        f"tlsTrustCertsFilePath={ca}",
        "authenticationEnabled=true",
        "authenticationProviders=org.apache.pulsar.broker.authentication."
        "AuthenticationProviderToken",
        f"tokenSecretKey=file://{secret}",
        f"superUserRoles={USER}",
        f"brokerClientAuthenticationPlugin={TOKEN_PLUGIN}",
        f"brokerClientAuthenticationParameters=file://{own_token}",
        "brokerClientTlsEnabled=true",
        f"brokerClientTrustCertsFilePath={ca}",
    ]
    return ca, token


def _command(java: Path, folder: Path, keep_data: bool) -> list[str]:
    data = folder / "data"
    return [
        str(java), *JVM_OPTIONS,
        f"-Dlog4j2.configurationFile={folder / 'log4j2.properties'}",
        f"@{folder / 'classpath.args'}",
        MAIN_CLASS, "--config", str(folder / "standalone.conf"),
        "--metadata-dir", str(data / "metadata"), "--bookkeeper-dir", str(data / "bookkeeper"),
        "--bookkeeper-port", "0", "--num-bookies", str(BOOKIES),
        "--no-functions-worker", "--no-stream-storage",
        *([] if keep_data else ["--wipe-data"]),
    ]  # fmt: skip


def _await_ready(
    process: subprocess.Popen, listeners: Listeners, folder: Path, config: dict[str, Any]
) -> None:
    """Return once the admin REST lists ``public/default`` (standalone makes the cluster, then
    that namespace), asked as the driver asks it with the printed file (its token and trust)."""
    client = ClientConfig.model_validate(config["client"])
    request = urllib.request.Request(
        f"{listeners.admin_url}/admin/v2/namespaces/public",
        headers=auth_headers(client.authentication),
    )
    context = ssl_context(client) if listeners.secure else None

    def serves_default_namespace() -> bool:
        try:
            with urllib.request.urlopen(request, timeout=2, context=context) as answer:
                return "public/default" in json.load(answer)
        except (OSError, ValueError, urllib.error.URLError):
            return False  # not serving yet; the wait is bounded

    await_serving(
        "pulsar",
        "Apache Pulsar",
        process,
        serves_default_namespace,
        READY_TIMEOUT_S,
        [_log(folder), folder / "stdout.log"],
        waiting_for=f"serve its admin REST at {listeners.admin_url}",
        ignoring=FIRST_START_NOISE,
    )


def _log(folder: Path) -> Path:
    return folder / "server.log"
