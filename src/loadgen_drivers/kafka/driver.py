"""The Kafka driver on confluent-kafka (librdkafka), with OMB's Kafka driver semantics.

* One ``Producer`` per loadgen producer, one ``Consumer`` (group id = subscription) per loadgen
  consumer, each consumer on a thread it owns; topics through ``AdminClient`` in batches of 500.
* Send time, message id and intended send time (the producer's wall clock at send in epoch
  ns, the engine's message id, the intended send time in epoch ns): in the payload's first 32
  bytes (:mod:`loadgen.driver_api.stamp`), cheaper for the client than a header; a payload
  shorter than that carries them in one header ``lg-stamp``, 24 bytes, three big-endian signed
  int64. Messages with neither are not loadgen's and are skipped (counted, logged once). The
  partition is ``message.partition()``.
* The compiled producer loop stamps the prefix itself and calls ``produce`` directly
  (:meth:`KafkaProducer.prefixed_send`), with no Python bytecode per message; ``send`` carries
  short payloads, the readiness probes and every message of the pure-Python loop.
* The engine's ``on_done(error, *ignored)`` goes to librdkafka as ``on_delivery`` unchanged: no
  wrapper per message. Delivery reports run inside ``poll()``/``flush()``, on the producer
  loop's thread.
* A full local queue (``BufferError``) blocks the send while serving delivery reports, like the
  Java client's blocking ``send()``; the wait shows up as publish delay.
* ``consumerAssignment: assign`` (loadgen's) replaces the group subscription with a manual
  assignment of every partition, starting at a committed offset or where ``auto.offset.reset``
  says (a "latest" start resolved when the consumer is created): no group join, so a consumer
  reads within milliseconds instead of seconds.
* ``transactional.id`` in ``producerConfig`` makes every producer transactional
  (:mod:`loadgen_drivers.kafka.transactions`): messages are acknowledged when their transaction
  commits.
* Unless ``enable.auto.commit=true``, offsets are committed asynchronously after non-empty
  batches, at most every 100 ms (OMB commits after every poll; its polls return 100 ms batches,
  while this consumer wakes on the first message to keep end-to-end latency honest).
"""

from __future__ import annotations

import logging
import struct
import threading
import time
from collections.abc import Callable
from time import time_ns

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_INVALID,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from loadgen.base.errors import BrokerLoginRefused, BrokerTlsFailed, BrokerUnreachable, DriverError
from loadgen.base.log_repeats import RepeatFilter
from loadgen.driver_api import (
    ACK,
    KEY,
    STAMP,
    VALUE,
    Address,
    ForeignMessages,
    OnDone,
    OnMessage,
    PrefixedSend,
    TopicSpec,
    TransactionSample,
    fail_if_refused,
    listed_addresses,
    prefixed_deliveries,
    tls_verify_problem,
)
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.driver_api.stamp import PREFIX_BYTES, Prefixer, Stamp, read_prefix
from loadgen.spec import parse_model
from loadgen_drivers.kafka import DEFAULT_PORT, Driver
from loadgen_drivers.kafka.config import KafkaConfig, check_with_librdkafka, to_librdkafka
from loadgen_drivers.kafka.transactions import Transactions, transactional_ids
from loadgen_drivers.kafka.trust import trust_context

log = logging.getLogger("loadgen.kafka")
client_log = logging.getLogger("loadgen.kafka.librdkafka")
"""librdkafka's own log lines go through Python logging rather than straight to stderr; a
reconnecting client's repeats are collapsed (:mod:`loadgen.base.log_repeats`)."""
client_log.addFilter(RepeatFilter())

STAMP_HEADER = "lg-stamp"
"""Carries :data:`loadgen.driver_api.STAMP`, 24 bytes, for a payload too short for the prefix."""
CREATE_BATCH = 500
ADMIN_TIMEOUT_S = 30.0
ADMIN_ERRORS_KEPT = 20
LOGIN_REFUSED = {KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED}
SLICE_S = 0.5
"""librdkafka's blocking calls do not return to Python for a signal, so a long wait is made of
waits this long: Ctrl-C (or SIGTERM) is handled within it, even against a broker that stalls."""


def _sliced_flush(producer: Producer, timeout_s: float) -> int:
    """``producer.flush(timeout_s)``, in slices; the messages still unacknowledged at the end."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = producer.flush(min(SLICE_S, max(0.0, deadline - time.monotonic())))
        if left == 0 or time.monotonic() >= deadline:
            return left


FULL_QUEUE_TIMEOUT_S = 30.0
CONSUME_BATCH = 500
COMMIT_INTERVAL_S = 0.1
"""Offsets are committed at most this often: a commit per small batch would swamp the broker."""
LATEST_RESETS = {"latest", "largest", "end"}
"""librdkafka's names for starting at the end (``largest`` is its default)."""
EARLIEST_RESETS = {"earliest", "smallest", "beginning"}
"""librdkafka's names for starting at the beginning."""
IDLE_WAIT_S = 0.1
"""How long an idle consumer blocks for the next message (also how fast close/pause react)."""


UNASSIGNED = -1
"""librdkafka's ``RD_KAFKA_PARTITION_UA``: the partitioner chooses. Passed because ``produce``
called with positional arguments only skips matching keyword names, a visible share of the
producer thread's CPU per message (bench/results/kafka.md "Issue #27 again")."""
pack_stamp = STAMP.pack
unpack_stamp = STAMP.unpack


def _stamp(data: bytes | None, headers_of: Callable[[], list | None]) -> Stamp:
    """The stamp in the payload's prefix, else in the first header (the only one loadgen sends);
    ``ValueError`` if neither. ``headers_of`` is called only for a payload without the prefix."""
    stamp = read_prefix(data) if data else None
    if stamp is not None:
        return stamp
    headers = headers_of()
    if not headers or headers[0][0] != STAMP_HEADER:
        raise ValueError("no loadgen header")
    try:
        return unpack_stamp(headers[0][1])
    except (struct.error, TypeError) as error:  # TypeError: a null value
        raise ValueError(f"malformed {STAMP_HEADER} header") from error


class KafkaProducer:
    def __init__(self, topic: str, conf: dict[str, str]) -> None:
        self._topic = topic
        self._producer = Producer(conf, logger=client_log)
        self._produce = self._producer.produce
        self._stamped = Prefixer().stamped

    def send(
        self, key: bytes | None, payload: bytes, on_done: OnDone, message_id: int, intended_ns: int
    ) -> None:
        headers = None
        try:
            if len(payload) >= PREFIX_BYTES:
                value = self._stamped(payload, time_ns(), message_id, intended_ns)
                self._produce(self._topic, value, key, UNASSIGNED, on_done)
            else:
                value = payload
                headers = [(STAMP_HEADER, pack_stamp(time_ns(), message_id, intended_ns))]
                self._produce(self._topic, value, key, on_delivery=on_done, headers=headers)
        except BufferError:
            self._send_when_room(key, value, on_done, headers)

    def prefixed_send(self) -> PrefixedSend:
        """``produce`` with positional arguments, as ``send`` calls it for a prefixed payload."""
        return PrefixedSend(self._produce, (self._topic, VALUE, KEY, UNASSIGNED, ACK), self._resend)

    def _resend(
        self, error: BaseException, key: bytes | None, value: bytes, on_done: OnDone
    ) -> None:
        """A full local queue: wait for room, as ``send`` does; any other error ends the run."""
        if not isinstance(error, BufferError):
            raise error
        self._send_when_room(key, value, on_done, None)

    def _send_when_room(
        self,
        key: bytes | None,
        payload: bytes,
        on_done: OnDone,
        headers: list[tuple[str, bytes]] | None,
    ) -> None:
        deadline = time.monotonic() + FULL_QUEUE_TIMEOUT_S
        while True:
            self._producer.poll(0.001)
            try:
                self._produce(self._topic, payload, key, on_delivery=on_done, headers=headers)
                return
            except BufferError as full:
                if time.monotonic() > deadline:
                    on_done(full)
                    return

    def poll(self, timeout_s: float = 0.0) -> None:
        """librdkafka waits in whole milliseconds (0.4 ms would not wait at all): wait those in
        ``poll``, then sleep the sub-millisecond rest unless a delivery report came first."""
        deadline = time.perf_counter() + timeout_s
        served = self._producer.poll(int(timeout_s * 1000) / 1000)
        rest = deadline - time.perf_counter()
        if not served and rest > 0:
            time.sleep(rest)

    def flush(self, timeout_s: float) -> int:
        return _sliced_flush(self._producer, timeout_s)

    def close(self) -> None:
        _sliced_flush(self._producer, 5.0)


class TransactionalKafkaProducer(KafkaProducer):
    """A producer writing in transactions (:mod:`loadgen_drivers.kafka.transactions`)."""

    def __init__(self, topic: str, conf: dict[str, str], config: KafkaConfig) -> None:
        super().__init__(topic, conf)
        self._transactions = Transactions(self._producer, config)
        self._transactions.start()

    def send(
        self, key: bytes | None, payload: bytes, on_done: OnDone, message_id: int, intended_ns: int
    ) -> None:
        transactions = self._transactions
        transactions.joined(on_done, message_id)
        super().send(key, payload, transactions.delivered, message_id, intended_ns)
        if transactions.due(message_id):
            transactions.end()

    def prefixed_send(self) -> PrefixedSend | None:
        """None: each message's ``on_done`` is kept until its transaction ends."""
        return None

    def poll(self, timeout_s: float = 0.0) -> None:
        super().poll(timeout_s)
        if self._transactions.due():
            self._transactions.end()

    def flush(self, timeout_s: float) -> int:
        left = super().flush(timeout_s)
        return self._transactions.end() if left == 0 else left

    def take_transactions(self) -> TransactionSample:
        return self._transactions.take()

    def close(self) -> None:
        self.flush(5.0)


def _start_positions(
    consumer: Consumer, topic: str, partitions: int, reset: str
) -> list[TopicPartition]:
    """Where each assigned partition starts: its committed offset, else as ``reset`` says.

    Resolved here, when the consumer is created, not by the fetcher later: a message produced
    after creation is never skipped ("latest" becomes the high watermark now), and another
    consumer of the same subscription that commits in the meantime cannot move this one's
    start (each assigned consumer reads every partition).
    """
    wanted = [TopicPartition(topic, p) for p in range(partitions)]
    try:
        committed = consumer.committed(wanted, timeout=ADMIN_TIMEOUT_S)
        return [
            position if position.offset >= 0 else _reset_position(consumer, position, reset)
            for position in committed
        ]
    except KafkaException as error:
        raise DriverError("kafka", f"finding where to start reading {topic}: {error}") from None


def _reset_position(consumer: Consumer, partition: TopicPartition, reset: str) -> TopicPartition:
    """A partition with no committed offset starts at its end, its beginning, or (``error``)
    wherever the client decides, as ``auto.offset.reset`` says."""
    if reset in LATEST_RESETS:
        end = consumer.get_watermark_offsets(partition, timeout=ADMIN_TIMEOUT_S)[1]
        return TopicPartition(partition.topic, partition.partition, end)
    offset = OFFSET_BEGINNING if reset in EARLIEST_RESETS else OFFSET_INVALID
    return TopicPartition(partition.topic, partition.partition, offset)


class KafkaConsumer:
    def __init__(
        self,
        topic: str,
        conf: dict[str, str],
        on_message: OnMessage,
        auto_commit: bool,
        partitions: int | None = None,
    ) -> None:
        """``partitions`` given: assign them all instead of joining the group."""
        self._consumer = Consumer(conf, logger=client_log)
        self._assigned: tuple[TopicPartition, ...] = ()
        """The partitions the consumer holds, as its rebalance callbacks said (replaced whole,
        so other threads read it without a lock). ``Consumer.assignment()`` is not used: it
        waits without a timeout for the client's group thread, which a broker restart can hold
        for tens of seconds (bench/results/loaded-host.md "Flake hunt")."""
        if partitions is None:
            self._consumer.subscribe(
                [topic],
                on_assign=self._on_assign,
                on_revoke=self._on_revoke,
                on_lost=self._on_lost,
            )
        else:
            reset = conf.get("auto.offset.reset", "largest")
            self._assigned = tuple(_start_positions(self._consumer, topic, partitions, reset))
            self._consumer.assign(list(self._assigned))
        self._on_message = on_message
        self._read_to: dict[int, int] = {}
        """Per partition, the offset after the last message handed to ``on_message``: a batch
        taken from the client is handed over one message at a time."""
        self._auto_commit = auto_commit
        self._stop = threading.Event()
        self._want_paused = False
        self._paused = False
        self._switches = threading.Condition()
        self._requested = self._applied = 0
        self.foreign = ForeignMessages(
            log, f"loadgen's payload prefix or a well-formed {STAMP_HEADER} header"
        )
        self.errors = 0
        self._thread = threading.Thread(
            target=self._run, name=f"kafka-consumer-{topic}", daemon=True
        )
        self._thread.start()

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Eager rebalancing hands over the whole assignment, cooperative only what is added;
        adding covers both, as the revocations before it removed what went."""
        held = {p.partition for p in self._assigned}
        self._assigned += tuple(p for p in partitions if p.partition not in held)
        if self._want_paused and partitions:
            consumer.pause(partitions)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Commit what was read of the partitions going before they go: their next owner starts
        at the committed offset, and without this it reads again what was read since the last
        periodic commit (duplicates on Apache Kafka at every consumer joining or leaving)."""
        if not self._auto_commit:
            read = [
                TopicPartition(p.topic, p.partition, self._read_to[p.partition])
                for p in partitions
                if p.partition in self._read_to
            ]
            if read:
                try:
                    consumer.commit(offsets=read, asynchronous=False)
                except KafkaException as error:  # a group that moved on: the next owner rereads
                    log.debug("commit at revocation failed: %s", error)
        self._on_lost(consumer, partitions)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Partitions gone without a revocation (a session that expired): nothing to commit."""
        gone = {p.partition for p in partitions}
        self._assigned = tuple(p for p in self._assigned if p.partition not in gone)

    def _apply_pause(self) -> None:
        with self._switches:
            requested, want = self._requested, self._want_paused
        if want != self._paused:
            if assignment := list(self._assigned):
                (self._consumer.pause if want else self._consumer.resume)(assignment)
            self._paused = want
        if requested != self._applied:
            with self._switches:
                self._applied = requested
                self._switches.notify_all()

    def _run(self) -> None:
        consume, on_message = self._consumer.consume, self._on_message
        recorder = prefixed_deliveries(on_message)
        on_prefixed = recorder.on_prefixed if recorder is not None else None
        last_commit = 0.0
        while not self._stop.is_set():
            self._apply_pause()
            # consume(n, t) waits for n messages or t: wait for one, then take what is queued
            messages = consume(1, IDLE_WAIT_S)
            if messages:
                messages += consume(CONSUME_BATCH, 0)
            delivered = False
            for message in messages:
                if message.error() is not None:
                    self._on_error(message.error())
                    continue
                data = message.value()
                partition = message.partition()
                if on_prefixed is None or not on_prefixed(data, partition):
                    try:
                        sent_ns, message_id, intended_ns = _stamp(data, message.headers)
                    except ValueError:
                        self.foreign()
                        continue
                    on_message(data, sent_ns, message_id, intended_ns, partition)
                self._read_to[partition] = message.offset() + 1
                delivered = True
            if delivered and not self._auto_commit:
                now = time.monotonic()
                if now - last_commit >= COMMIT_INTERVAL_S:
                    self._commit()
                    last_commit = now

    def _commit(self) -> None:
        try:
            self._consumer.commit(asynchronous=True)
        except KafkaException as error:  # e.g. no offsets yet after a rebalance
            log.debug("commit failed: %s", error)

    def _on_error(self, error: KafkaError) -> None:
        if error.code() == KafkaError._PARTITION_EOF:
            return
        self.errors += 1
        if self.errors in (1, 10, 100, 1000):
            log.warning("consumer error #%d: %s", self.errors, error)

    def unread(self, timeout_s: float) -> dict[str, int] | None:
        """Per assigned partition, its high watermark minus the offset after the last message
        handed over (else the client's position, else the low watermark). The high watermark is
        the higher of the broker's answer and the last fetch response's: tansu can answer a
        ListOffsets with a lower high watermark than its fetch responses carry."""
        deadline = time.monotonic() + timeout_s
        try:
            assignment = list(self._assigned)
            if not assignment:  # revoked (a broker that stopped answering): nothing to say
                return None
            positions = self._consumer.position(assignment)  # the client's own, not asked
            counts = {}
            for position in positions:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                low, high = self._consumer.get_watermark_offsets(position, timeout=left)
                high = max(high, self._consumer.get_watermark_offsets(position, cached=True)[1])
                start = position.offset if position.offset >= 0 else low
                start = self._read_to.get(position.partition, start)
                counts[str(position.partition)] = max(0, high - start)
        except KafkaException as error:
            log.debug("reading the backlog failed: %s", error)
            return None
        return counts

    def pause(self) -> None:
        """Returns once the consumer thread has paused its assignment."""
        self._switch(paused=True)

    def resume(self) -> None:
        self._switch(paused=False)

    def _switch(self, *, paused: bool) -> None:
        with self._switches:
            self._want_paused = paused
            self._requested += 1
            target = self._requested
            if not self._switches.wait_for(lambda: self._applied >= target, IDLE_WAIT_S * 10):
                log.warning(
                    "the consumer did not apply %s in time", "pause" if paused else "resume"
                )

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._consumer.close()


class KafkaDriver(Driver):
    """What ``Driver.from_config`` returns: the driver at work."""

    def __init__(self, spec: DriverSpec, config: KafkaConfig) -> None:
        self.spec = spec
        self.config = config
        common = to_librdkafka("commonConfig", config.common_config, spec.source)
        self._producer_conf = {
            **common,
            **to_librdkafka("producerConfig", config.producer_config, spec.source),
        }
        self._consumer_conf = {
            **common,
            **to_librdkafka("consumerConfig", config.consumer_config, spec.source),
        }
        self._admin_conf = common
        self._transactional_ids: dict[str, Callable[[], str]] = {}
        """Per topic, the next producer's transactional id."""
        self._admin: AdminClient | None = None
        self._admin_errors: list[KafkaError] = []
        """What librdkafka reported while connecting (a TLS or SASL failure says why there)."""

    @classmethod
    def validate_config(cls, spec: DriverSpec) -> KafkaConfig:
        config = parse_model(KafkaConfig, dict(spec.config), file=spec.source, lenient=spec.lenient)
        common = to_librdkafka("commonConfig", config.common_config, spec.source)
        check_with_librdkafka("commonConfig", common, spec.source)
        check_with_librdkafka(
            "producerConfig",
            {**common, **to_librdkafka("producerConfig", config.producer_config, spec.source)},
            spec.source,
        )
        check_with_librdkafka(
            "consumerConfig",
            {**common, **to_librdkafka("consumerConfig", config.consumer_config, spec.source)},
            spec.source,
        )
        return config

    @classmethod
    def from_config(cls, spec: DriverSpec) -> KafkaDriver:
        return cls(spec, cls.validate_config(spec))

    def _admin_client(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient(
                {**self._admin_conf, "error_cb": self._on_admin_error}, logger=client_log
            )
        return self._admin

    def _on_admin_error(self, error: KafkaError) -> None:
        self._admin_errors.append(error)
        del self._admin_errors[:-ADMIN_ERRORS_KEPT]

    def check_reachable(self, timeout_s: float) -> None:
        """Refused by every bootstrap server: at once. Otherwise a metadata request, which
        librdkafka retries (a refusal too, reported only to ``error_cb``) until ``timeout_s``."""
        servers = self.config.bootstrap_servers
        address = servers or "<no bootstrap.servers>"
        deadline = time.monotonic() + timeout_s
        tried = listed_addresses(servers.split(","), DEFAULT_PORT)
        fail_if_refused("kafka", address, tried, timeout_s)
        while True:
            try:
                wait = min(SLICE_S, max(0.01, deadline - time.monotonic()))
                self._admin_client().list_topics(timeout=wait)
                return
            except KafkaException as error:
                self._admin_client().poll(0)  # serves the error callbacks
                self._fail_if_login_or_tls_refused(address, tried)
                if time.monotonic() >= deadline:
                    detail = str(error.args[0])
                    if self._admin_errors:
                        detail += f"; librdkafka: {self._admin_errors[-1].str()}"
                    raise BrokerUnreachable("kafka", address, detail) from None

    def _fail_if_login_or_tls_refused(self, address: str, tried: list[Address]) -> None:
        """A refused login or a failed TLS handshake, at once: librdkafka would retry both
        until the deadline, and neither is an unreachable broker. For TLS, a handshake of our
        own says whether the CA or the certificate's dates were wrong (librdkafka's text is the
        same for both)."""
        for error in self._admin_errors:
            if error.code() in LOGIN_REFUSED:
                user = self._admin_conf.get("sasl.username")
                raise BrokerLoginRefused("kafka", address, user, error.str()) from None
            if error.code() == KafkaError._SSL:
                context = trust_context(self._admin_conf)
                found = (tls_verify_problem(at, context) for at in tried if context)
                detail = next((problem for problem in found if problem), error.str())
                raise BrokerTlsFailed("kafka", address, detail) from None

    def create_topics(self, topics: list[TopicSpec]) -> None:
        replication = self.config.replication_factor or -1
        admin = self._admin_client()
        for start in range(0, len(topics), CREATE_BATCH):
            batch = [
                NewTopic(t.name, t.partitions, replication, config=dict(self.config.topic_config))
                for t in topics[start : start + CREATE_BATCH]
            ]
            for name, future in admin.create_topics(batch, request_timeout=ADMIN_TIMEOUT_S).items():
                try:
                    future.result(timeout=ADMIN_TIMEOUT_S)
                except KafkaException as error:
                    if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                        raise DriverError(
                            "kafka", f"creating topic {name}: {error.args[0]}"
                        ) from None
        log.info("created %d topics", len(topics))

    def delete_topics(self, names: list[str]) -> None:
        if not names:
            return
        futures = self._admin_client().delete_topics(names, request_timeout=ADMIN_TIMEOUT_S)
        for name, future in futures.items():
            try:
                future.result(timeout=ADMIN_TIMEOUT_S)
            except Exception as error:
                log.warning("deleting topic %s failed: %s", name, error)

    def create_producer(self, topic: str) -> KafkaProducer:
        if not self.config.transactional:
            return KafkaProducer(topic, self._producer_conf)
        ids = self._transactional_ids.setdefault(
            topic, transactional_ids(self._producer_conf["transactional.id"], topic)
        )
        conf = {**self._producer_conf, "transactional.id": ids()}
        return TransactionalKafkaProducer(topic, conf, self.config)

    def create_consumer(
        self, topic: str, subscription: str, on_message: OnMessage
    ) -> KafkaConsumer:
        conf = {**self._consumer_conf, "group.id": subscription}
        partitions = None
        if self.config.consumer_assignment == "assign":
            partitions = self._partition_count(topic)
        return KafkaConsumer(topic, conf, on_message, self.config.auto_commit, partitions)

    def partition_leader(self, topic: str, partition: int) -> str | None:
        """The leader as the cluster's metadata names it now (no leader: ``None``)."""
        metadata = self._admin_client().list_topics(topic, timeout=ADMIN_TIMEOUT_S)
        found = metadata.topics.get(topic)
        if found is None or partition not in found.partitions:
            return None
        leader = metadata.brokers.get(found.partitions[partition].leader)
        return None if leader is None else f"{leader.host}:{leader.port}"

    def _partition_count(self, topic: str) -> int:
        metadata = self._admin_client().list_topics(topic, timeout=ADMIN_TIMEOUT_S)
        found = metadata.topics.get(topic)
        if found is None or found.error is not None or not found.partitions:
            problem = found.error if found is not None else "not in the metadata"
            raise DriverError("kafka", f"cannot assign topic {topic}: {problem}")
        return len(found.partitions)

    def close(self) -> None:
        self._admin = None
