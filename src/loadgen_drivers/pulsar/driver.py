"""The Pulsar driver on pulsar-client, with OMB's Pulsar driver semantics.

* One client per driver; one producer per loadgen producer (:mod:`.producer`), one listener
  consumer per loadgen consumer (:mod:`.consumer`). Settings map as :mod:`.config` tabulates.
* Topics are ``<topicType>://<namespacePrefix>-<rand7>/test-<n>-<rand>`` (OMB's names). With
  an admin REST API answering at ``httpUrl``, the first ``create_topics`` creates the tenant and
  namespace with OMB's policies, topics with more than one partition are created partitioned
  (one partition: auto-created on first use, as OMB does), and deleted at teardown, then the
  namespace too (OMB leaves both behind). Without admin REST (none configured, or none
  answering, e.g. pulsar-lite) topics are auto-created by the broker with *its* partition
  count, which the log reports next to the one asked for, and they stay on the broker.
* Send time, message id and intended send time: the payload's first 32 bytes, or the message
  property ``lg-stamp`` where the payload is shorter (:mod:`.stamp`); messages without a stamp
  are skipped (counted, logged once). The partition index comes from the partition topic's
  name, 0 on a non-partitioned topic (:mod:`.consumer`). Publish latency is timed from the
  ``send_async`` callback.
"""

from __future__ import annotations

import logging
import secrets
import string
import time
from math import ceil
from urllib.parse import urlsplit

from loadgen.base.errors import BrokerLoginRefused, BrokerTlsFailed, BrokerUnreachable, DriverError
from loadgen.base.refusal import REFUSAL_WAIT_S
from loadgen.driver_api import (
    OnMessage,
    TopicSpec,
    fail_if_refused,
    tls_verify_problem,
    url_addresses,
)
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.spec import parse_model
from loadgen_drivers.pulsar import Driver
from loadgen_drivers.pulsar.admin import Admin, ssl_context
from loadgen_drivers.pulsar.client import (
    client_kwargs,
    consumer_kwargs,
    open_client,
    producer_kwargs,
    pulsar,
)
from loadgen_drivers.pulsar.config import AckMode, PulsarConfig, warn_unexpressible
from loadgen_drivers.pulsar.consumer import PulsarConsumer
from loadgen_drivers.pulsar.handshake import CHECK_TIMEOUT_S as LOGIN_CHECK_S
from loadgen_drivers.pulsar.handshake import login_refusal
from loadgen_drivers.pulsar.login import login_name
from loadgen_drivers.pulsar.producer import PulsarProducer

log = logging.getLogger("loadgen.pulsar")

UNREACHABLE = (pulsar.ConnectError, pulsar.Timeout, pulsar.LookupError)
"""What a lookup raises when no broker answers (anything else is a broker answering)."""
LOGIN_REFUSED = (pulsar.AuthenticationError, pulsar.AuthorizationError)
NAMESPACE_ALPHABET = string.ascii_letters + string.digits
DEFAULT_PORTS = {"pulsar": 6650, "pulsar+ssl": 6651}


def _rand7() -> str:
    return "".join(secrets.choice(NAMESPACE_ALPHABET) for _ in range(7))


class PulsarDriver(Driver):
    """What ``Driver.from_config`` returns: the driver at work."""

    def __init__(self, spec: DriverSpec, config: PulsarConfig) -> None:
        self.spec = spec
        self.config = config
        self.namespace = f"{config.client.namespace_prefix}-{_rand7()}"
        self._admin = Admin(config.client) if config.client.http_url else None
        self._rest: bool | None = None
        self._namespace_created = False
        self._created: dict[str, int] = {}
        self._client: pulsar.Client | None = None
        self._producer_settings = producer_kwargs(config.producer)
        self._consumer_settings = consumer_kwargs(config.consumer)

    @classmethod
    def validate_config(cls, spec: DriverSpec) -> PulsarConfig:
        config = parse_model(
            PulsarConfig, dict(spec.config), file=spec.source, lenient=spec.lenient
        )
        client_kwargs(config.client)  # an authentication plugin the client rejects fails here
        return config

    @classmethod
    def from_config(cls, spec: DriverSpec) -> PulsarDriver:
        config = cls.validate_config(spec)
        warn_unexpressible(config, spec.source)
        return cls(spec, config)

    @property
    def topic_name_prefix(self) -> str:
        return f"{self.config.client.topic_type.value}://{self.namespace}/test"

    def _pulsar(self) -> pulsar.Client:
        if self._client is None:
            self._client = open_client(self.config.client)
        return self._client

    def check_reachable(self, timeout_s: float) -> None:
        """Refused at every address of the service URL: at once. A certificate that does not
        verify, or a login the broker refuses: at once too (the client would report the first
        as a connect error and retry the second until its timeout, like a silent broker).
        Otherwise a lookup in our (maybe not yet existing) namespace, on a client that gives up
        when ``timeout_s`` is over; a broker that answers with an error is reachable."""
        url = self.config.client.service_url
        started = time.monotonic()
        scheme = urlsplit(url).scheme
        addresses = url_addresses(url, DEFAULT_PORTS[scheme])  # the config accepts two schemes
        fail_if_refused("pulsar", url, addresses, timeout_s)
        context = ssl_context(self.config.client) if scheme == "pulsar+ssl" else None
        auth = self.config.client.authentication
        for address in addresses:
            problem = context and tls_verify_problem(address, context)
            if problem:
                raise BrokerTlsFailed("pulsar", url, problem)
            wait = (timeout_s - (time.monotonic() - started)) / 2
            reason = login_refusal(address, auth, context, max(0.1, min(LOGIN_CHECK_S, wait)))
            if reason:
                raise BrokerLoginRefused("pulsar", url, login_name(auth), reason)
        # the client counts whole seconds: a silent URL, which the check above waited for,
        # must not round the lookup up past timeout_s
        left = timeout_s - (time.monotonic() - started)
        client = open_client(self.config.client, max(1, ceil(left - REFUSAL_WAIT_S)))
        try:
            client.get_topic_partitions(f"{self.topic_name_prefix}-reachability")
        except LOGIN_REFUSED as error:
            raise BrokerLoginRefused("pulsar", url, login_name(auth), str(error)) from None
        except UNREACHABLE as error:
            raise BrokerUnreachable("pulsar", url, repr(error)) from None
        except pulsar.PulsarException as error:
            log.debug("reachability lookup answered with %r", error)
        finally:
            client.close()

    def _uses_rest(self) -> bool:
        if self._rest is None:
            self._rest = self._admin is not None and self._admin.answers()
            if not self._rest:
                where = f"at {self.config.client.http_url}" if self._admin else "(no httpUrl)"
                log.warning(
                    "no admin REST API %s: topics are auto-created by the broker, with the "
                    "broker's partition count, and stay on it after the run",
                    where,
                )
                if "persistence" in self.config.client.model_fields_set:
                    log.warning("client.persistence is not applied: it needs the admin REST API")
        return self._rest

    def create_topics(self, topics: list[TopicSpec]) -> None:
        if not self._uses_rest():
            self._report_auto_created(topics)
            return
        assert self._admin is not None
        if not self._namespace_created:
            client = self.config.client
            self._admin.create_namespace(self.namespace, client.cluster_name, client.persistence)
            self._namespace_created = True
        for topic in topics:
            if topic.partitions > 1:
                self._admin.create_partitioned_topic(topic.name, topic.partitions)
            self._created[topic.name] = topic.partitions
        log.info("created %d topics in %s", len(topics), self.namespace)

    def _report_auto_created(self, topics: list[TopicSpec]) -> None:
        """Look each topic up (which makes the broker create it) and say where the partition
        count differs from the one asked for."""
        client = self._pulsar()
        differing = []
        for topic in topics:
            try:
                actual = len(client.get_topic_partitions(topic.name))
            except pulsar.PulsarException as error:
                raise DriverError("pulsar", f"looking up topic {topic.name}: {error}") from None
            if actual != topic.partitions:
                differing.append((topic.name, topic.partitions, actual))
        if differing:
            name, wanted, actual = differing[0]
            log.warning(
                "%d of %d topics have the broker's partition count, not the one asked for "
                "(e.g. %s: %d asked, %d made)",
                len(differing),
                len(topics),
                name,
                wanted,
                actual,
            )

    def delete_topics(self, names: list[str]) -> None:
        if not names:
            return
        if not self._uses_rest():
            log.info("%d topics stay on the broker (no admin REST API to delete them)", len(names))
            return
        assert self._admin is not None
        for name in names:
            try:
                self._admin.delete_topic(name, partitioned=self._created.get(name, 1) > 1)
                self._created.pop(name, None)
            except DriverError as error:
                log.warning("deleting topic %s failed: %s", name, error)

    def create_producer(self, topic: str) -> PulsarProducer:
        try:
            producer = self._pulsar().create_producer(topic, **self._producer_settings)
        except pulsar.PulsarException as error:
            raise DriverError("pulsar", f"creating a producer on {topic}: {error!r}") from None
        return PulsarProducer(producer)

    def create_consumer(
        self, topic: str, subscription: str, on_message: OnMessage
    ) -> PulsarConsumer:
        cumulative = self.config.consumer.ack_mode is AckMode.CUMULATIVE
        try:
            return PulsarConsumer(
                self._pulsar(), topic, subscription, on_message, self._consumer_settings, cumulative
            )
        except pulsar.PulsarException as error:
            raise DriverError(
                "pulsar", f"subscribing {subscription} to {topic}: {error!r}"
            ) from None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._namespace_created and not self._created and self._admin is not None:
            try:
                self._admin.delete_namespace(self.namespace)
            except DriverError as error:
                log.warning("deleting namespace %s failed: %s", self.namespace, error)
            self._namespace_created = False
