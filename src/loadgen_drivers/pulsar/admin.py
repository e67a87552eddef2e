"""The slice of Pulsar's admin REST API (v2) that OMB's set-up uses, on the standard library.

Tenant (allowed clusters), namespace with OMB's policies (persistence quorums and mark-delete
rate 1.0, an unlimited backlog quota, deduplication), partitioned topics, and deletion. A broker
without admin REST (pulsar-lite) is detected by :meth:`Admin.answers`; the driver then falls back
to auto-created topics. Credentials: token and basic authentication go into the Authorization
header; other plugins (TLS, OAuth2, Athenz) reach the binary protocol only, with one warning.
"""

from __future__ import annotations

import base64
import json
import logging
import ssl
import urllib.error
import urllib.request

from loadgen.base.errors import ConfigError, DriverError
from loadgen.driver_api import client_context
from loadgen_drivers.pulsar.config import Authentication, ClientConfig, Persistence
from loadgen_drivers.pulsar.login import credentials

log = logging.getLogger("loadgen.pulsar")

ADMIN_TIMEOUT_S = 15.0
CONFLICT = 409
NOT_FOUND = 404


def rest_path(topic: str) -> str:
    """``persistent://t/ns/name`` as the admin API spells it: ``persistent/t/ns/name``."""
    domain, _, rest = topic.partition("://")
    return f"{domain}/{rest}"


def auth_headers(auth: Authentication) -> dict[str, str]:
    if not auth.plugin:
        return {}
    login = credentials(auth)
    if login is None:
        log.warning(
            "admin REST requests carry no credentials: only token and basic authentication are "
            "supported there (plugin %s)",
            auth.plugin,
        )
        return {}
    method, credential = login
    if method == "token":
        return {"Authorization": f"Bearer {credential}"}
    return {"Authorization": f"Basic {base64.b64encode(credential.encode()).decode()}"}


def ssl_context(client: ClientConfig) -> ssl.SSLContext:
    """The trust the client's TLS settings give, for the admin REST and the handshake check; a
    CA file that cannot be read is a config error (exit 2), not a traceback."""
    cafile = client.tls_trust_certs_file_path
    try:
        context = client_context(cafile=cafile)
    except (OSError, ssl.SSLError) as error:
        raise ConfigError(
            f"the CA file cannot be read ({getattr(error, 'strerror', None) or error})",
            path="client.tlsTrustCertsFilePath",
            value=cafile,
            allowed="a readable PEM file of CA certificates",
        ) from None
    if client.tls_allow_insecure_connection:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context.check_hostname = client.tls_enable_hostname_verification
    return context


class Admin:
    def __init__(self, client: ClientConfig) -> None:
        assert client.http_url is not None
        self.url = client.http_url
        self._headers = auth_headers(client.authentication)
        self._context = ssl_context(client) if self.url.startswith("https") else None

    def _call(self, method: str, path: str, body: object = None, *, allow: tuple = ()) -> object:
        data = None if body is None else json.dumps(body).encode()
        headers = {**self._headers, "Content-Type": "application/json"}
        request = urllib.request.Request(
            f"{self.url}/admin/v2/{path}", data=data, headers=headers, method=method
        )
        try:
            with urllib.request.urlopen(
                request, timeout=ADMIN_TIMEOUT_S, context=self._context
            ) as response:
                text = response.read()
        except urllib.error.HTTPError as error:
            if error.code in allow:
                return None
            detail = error.read().decode(errors="replace")[:500]
            raise DriverError(
                "pulsar", f"admin {method} {path} at {self.url}: HTTP {error.code} {detail}"
            ) from None
        except OSError as error:
            raise DriverError("pulsar", f"admin {method} {path} at {self.url}: {error}") from None
        return json.loads(text) if text else None

    def answers(self) -> bool:
        """True if an admin REST API answers at the URL (any HTTP status counts as an answer)."""
        try:
            self._call("GET", "clusters")
        except DriverError as error:
            if "HTTP " in str(error):
                return True
            log.debug("no admin REST: %s", error)
            return False
        return True

    def create_namespace(
        self, namespace: str, cluster: str | None, persistence: Persistence
    ) -> None:
        """OMB's set-up: tenant, namespace, quorums, unlimited backlog, deduplication."""
        tenant = namespace.split("/")[0]
        clusters = [cluster] if cluster else self._call("GET", "clusters")
        self._call(
            "PUT",
            f"tenants/{tenant}",
            {"adminRoles": [], "allowedClusters": clusters},
            allow=(CONFLICT,),
        )
        self._call("PUT", f"namespaces/{namespace}", allow=(CONFLICT,))
        self._call(
            "POST",
            f"namespaces/{namespace}/persistence",
            {
                "bookkeeperEnsemble": persistence.ensemble_size,
                "bookkeeperWriteQuorum": persistence.write_quorum,
                "bookkeeperAckQuorum": persistence.ack_quorum,
                "managedLedgerMaxMarkDeleteRate": 1.0,
            },
        )
        self._call(
            "POST",
            f"namespaces/{namespace}/backlogQuota?backlogQuotaType=destination_storage",
            {"limitSize": -1, "limitTime": -1, "policy": "producer_exception"},
        )
        self._call(
            "POST", f"namespaces/{namespace}/deduplication", persistence.deduplication_enabled
        )

    def create_partitioned_topic(self, topic: str, partitions: int) -> None:
        self._call("PUT", f"{rest_path(topic)}/partitions", partitions, allow=(CONFLICT,))

    def delete_topic(self, topic: str, partitioned: bool) -> None:
        suffix = "/partitions" if partitioned else ""
        self._call("DELETE", f"{rest_path(topic)}{suffix}?force=true", allow=(NOT_FOUND,))

    def delete_namespace(self, namespace: str) -> None:
        self._call("DELETE", f"namespaces/{namespace}", allow=(NOT_FOUND,))
