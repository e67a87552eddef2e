"""The Pravega driver on the ``pravega`` Python client, with OMB's Pravega driver semantics.

* A topic is a stream in ``client.scopeName``, named as OMB does (only ``[A-Za-z0-9-]`` kept);
  its partitions are the stream's segments: a fixed count, or the minimum of an auto-scaling
  policy (:mod:`.config`). A subscription is a reader group named after it (cleaned the same
  way), reading from the stream's head; each consumer is a reader in it (:mod:`.consumer`).
* Producers: ``write_event_async`` on a shared event-loop thread (:mod:`.producer`), or, with
  ``enableTransaction``, one transaction per ``eventsPerTransaction`` events, made by a child
  process of the producer's own (:mod:`.transactions`). Keys become routing keys; no key, no
  routing key (:mod:`.events`).
* Send time, message id and intended send time: a 24-byte prefix of the event with
  ``includeTimestampInEvent``, none without (:mod:`.events`); the partition index passed to
  ``on_message`` is -1 (the client does not expose an event's segment).
* Guards (:mod:`.guard`, :mod:`.control`): every entry point first checks that the controller
  accepts a TCP connection; scope, stream and reader-group calls, and transactions, run in a
  child process with a deadline (``client.timeoutSeconds``); the rest runs here, after the
  controller has answered.
* Scaling: at the end of a run each stream's segments, and its epoch (how many times it scaled),
  are read off the stream cut of a reader group made at the stream's tail (:meth:`topic_scaling`).
* Teardown: reader groups are deleted and streams sealed and deleted (``deleteStreams: false``
  seals and keeps both, as OMB). The scope is deleted at ``close`` only if this driver created
  it and every stream it made is gone; a scope that was there before is left alone.
"""

from __future__ import annotations

import logging
import uuid
from functools import partial
from typing import Any

from loadgen.base.errors import BrokerUnreachable, DriverError, LoadgenError
from loadgen.driver_api import OnMessage, Producer, TopicScaling, TopicSpec
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.spec import parse_model
from loadgen_drivers.pravega import Driver, control, transactions
from loadgen_drivers.pravega.client import StreamManager, open_manager
from loadgen_drivers.pravega.config import PravegaConfig, warn_caveats
from loadgen_drivers.pravega.consumer import ReaderConsumer
from loadgen_drivers.pravega.control import ControlProcess
from loadgen_drivers.pravega.events import clean_name, stamped, unstamped
from loadgen_drivers.pravega.guard import PROBE_TIMEOUT_S, client_call, probe_tcp
from loadgen_drivers.pravega.producer import EventProducer, WriteLoop
from loadgen_drivers.pravega.transactions import TransactionalProducer

log = logging.getLogger("loadgen.pravega")

SEGMENT_NUMBER_BITS = 32
"""A segment id is its epoch (the stream's scalings so far) above a 32-bit segment number."""


class PravegaDriver(Driver):
    """What ``Driver.from_config`` returns: the driver at work."""

    def __init__(self, spec: DriverSpec, config: PravegaConfig) -> None:
        self.spec = spec
        self.config = config
        self.uri = config.client.controller_uri
        self.scope = config.client.scope_name
        self._control = ControlProcess(self.uri)
        self._manager: StreamManager | None = None
        self._writes: WriteLoop | None = None
        self._encode = stamped if config.include_timestamp_in_event else unstamped
        self._scope_ready = False
        self._scope_created = False
        self._streams: set[str] = set()
        self._segments_created: dict[str, int] = {}
        """Stream -> the segments it was created with."""
        self._groups: dict[tuple[str, str], Any] = {}
        """(stream, reader group name) -> the client's reader group, made once per name."""

    @classmethod
    def validate_config(cls, spec: DriverSpec) -> PravegaConfig:
        return parse_model(PravegaConfig, dict(spec.config), file=spec.source, lenient=spec.lenient)

    @classmethod
    def from_config(cls, spec: DriverSpec) -> PravegaDriver:
        config = cls.validate_config(spec)
        warn_caveats(config, spec.source)
        return cls(spec, config)

    @property
    def topic_name_prefix(self) -> str:
        return "openmessaging-benchmark"

    def _call(self, what: str, operation: control.Operation, *args: object) -> Any:
        return self._control.call(what, operation, *args, timeout_s=self.config.client.timeout_s)

    def _client(self) -> StreamManager:
        """The in-process manager that makes writers and readers (it connects lazily)."""
        if self._manager is None:
            self._manager = client_call(self.uri, "opening a client", open_manager, self.uri)
        return self._manager

    def check_reachable(self, timeout_s: float) -> None:
        """A TCP connect, then a scope listing answered within the deadline; an answer that
        is an error (no permission, say) still proves the controller is there."""
        probe_tcp(self.uri, min(PROBE_TIMEOUT_S, timeout_s))
        budget = min(timeout_s, self.config.client.timeout_s)
        try:
            self._control.call("listing scopes", control.list_scopes, timeout_s=budget)
        except DriverError as error:
            log.debug("the controller answered with an error: %s", error)

    def create_topics(self, topics: list[TopicSpec]) -> None:
        probe_tcp(self.uri)
        if self.config.create_scope and not self._scope_ready:
            self._scope_created = self._call(
                f"creating scope {self.scope}", control.create_scope, self.scope
            )
            self._scope_ready = True
        for topic in topics:
            stream = clean_name(topic.name)
            self._call(
                f"creating stream {self.scope}/{stream}",
                control.create_stream,
                self.scope,
                stream,
                self.config.scaling(topic.partitions),
            )
            self._streams.add(stream)
            self._segments_created[stream] = topic.partitions
        log.info("created %d streams in scope %s", len(topics), self.scope)

    def topic_scaling(self, names: list[str]) -> list[TopicScaling]:
        """Each stream's segments now, and its epoch: how many times it scaled."""
        probe_tcp(self.uri)
        scaling = []
        for name in names:
            stream = clean_name(name)
            if stream not in self._segments_created:
                continue
            segments = self._call(
                f"listing the segments of {self.scope}/{stream}",
                control.stream_segments,
                self.scope,
                stream,
                f"lg-segments-{uuid.uuid4().hex[:12]}",
            )
            epochs = [segment >> SEGMENT_NUMBER_BITS for segment in segments]
            created = self._segments_created[stream]
            scaling.append(TopicScaling(name, created, len(segments), max(epochs, default=0)))
        return scaling

    def create_producer(self, topic: str) -> Producer:
        probe_tcp(self.uri)
        stream = clean_name(topic)
        if self.config.enable_transaction:
            return self._transactional_producer(stream)
        where = f"{self.scope}/{stream}"
        create_writer = self._client().create_writer
        writer = client_call(
            self.uri, f"creating a writer on {where}", create_writer, self.scope, stream
        )
        if self._writes is None:
            self._writes = WriteLoop()
        return EventProducer(writer.write_event_async, self._writes, self._encode)

    def _transactional_producer(self, stream: str) -> TransactionalProducer:
        """A producer whose transactions are made by a child process of its own
        (:mod:`.transactions` says why); its writer is made there now, so that a refusal
        surfaces here. A commit is waited for a transaction lease longer than other calls
        (:data:`.transactions.LEASE_S` says why)."""
        child = ControlProcess(self.uri)
        where = f"{self.scope}/{stream}"
        writer_id = uuid.uuid4().int
        timeout_s = self.config.client.timeout_s
        try:
            child.call(
                f"creating a transactional writer on {where}",
                transactions.open_writer,
                self.scope,
                stream,
                writer_id,
                timeout_s=timeout_s,
            )
        except BaseException:
            child.close()
            raise
        commit = partial(
            child.call,
            f"committing a transaction on {where}",
            transactions.commit_in_child,
            self.scope,
            stream,
            writer_id,
            timeout_s=timeout_s + transactions.LEASE_S,
        )
        return TransactionalProducer(
            commit, self.config.transaction_size, self._encode, child.close
        )

    def create_consumer(
        self, topic: str, subscription: str, on_message: OnMessage
    ) -> ReaderConsumer:
        probe_tcp(self.uri)
        stream, name = clean_name(topic), clean_name(subscription)
        group = self._reader_group(stream, name)
        reader = client_call(
            self.uri, f"creating a reader in group {name}", group.create_reader, uuid.uuid4().hex
        )
        return ReaderConsumer(
            reader,
            on_message,
            self.config.include_timestamp_in_event,
            partial(self._take_offline, reader, name),
        )

    def _reader_group(self, stream: str, name: str) -> Any:
        """Created first in the control process (bounded), then here, where the client finds
        it initialised and only loads it."""
        if (stream, name) not in self._groups:
            what = f"creating reader group {name} on {self.scope}/{stream}"
            self._call(what, control.create_reader_group, self.scope, stream, name)
            self._groups[stream, name] = client_call(
                self.uri, what, self._client().create_reader_group, name, self.scope, stream
            )
        return self._groups[stream, name]

    def _take_offline(self, reader: Any, group: str) -> None:
        try:
            probe_tcp(self.uri)
            client_call(self.uri, f"taking a reader of {group} offline", reader.reader_offline)
        except LoadgenError as error:
            log.warning("%s; the group keeps the reader until it is deleted", error)

    def delete_topics(self, names: list[str]) -> None:
        streams = sorted({clean_name(name) for name in names} & self._streams)
        if not streams:
            return
        try:
            probe_tcp(self.uri)
        except BrokerUnreachable as error:
            log.warning("%s; streams left in scope %s: %s", error, self.scope, ", ".join(streams))
            return
        for position, stream in enumerate(streams):
            try:
                self._delete_stream(stream)
            except BrokerUnreachable as error:
                left = ", ".join(streams[position:])
                log.warning("%s; streams left in scope %s: %s", error, self.scope, left)
                return
            except DriverError as error:
                log.warning("%s", error)

    def delete_subscriptions(self, names: list[str]) -> None:
        """The reader groups this driver created on ``names``' streams (when streams are
        deleted at all); another worker of the run created the streams and deletes them."""
        if not self.config.delete_streams:
            return
        for stream in sorted({clean_name(name) for name in names}):
            try:
                self._delete_groups(stream)
            except LoadgenError as error:
                log.warning("%s; reader groups of %s/%s are left", error, self.scope, stream)
                return

    def _delete_groups(self, stream: str) -> None:
        for key in [key for key in self._groups if key[0] == stream]:
            group = key[1]
            self._call(
                f"deleting reader group {group}", control.delete_reader_group, self.scope, group
            )
            del self._groups[key]

    def _delete_stream(self, stream: str) -> None:
        where = f"{self.scope}/{stream}"
        deleting = self.config.delete_streams
        if deleting:
            self._delete_groups(stream)
        self._call(f"sealing stream {where}", control.seal_stream, self.scope, stream)
        if deleting:
            self._call(f"deleting stream {where}", control.delete_stream, self.scope, stream)
        self._streams.discard(stream)
        log.info("%s stream %s", "deleted" if deleting else "sealed", where)

    def close(self) -> None:
        if self._writes is not None:
            self._writes.close()
            self._writes = None
        if self._scope_created and self.config.delete_streams and not self._streams:
            try:
                probe_tcp(self.uri)
                self._call(f"deleting scope {self.scope}", control.delete_scope, self.scope)
                self._scope_created = False
            except LoadgenError as error:
                log.warning("%s; scope %s is left", error, self.scope)
        self._control.close()
        self._groups.clear()
        self._manager = None
