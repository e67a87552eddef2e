"""The local Pravega's segment store: a TCP server speaking Pravega's segment-store wire protocol
over :class:`Segments`, so the real client writes, reads and keeps reader-group state in it.

Requests on one connection are answered in order, one reply each, except reads: a read at the
tail of a segment waits for data on a task of its own while later requests on the connection are
answered, as Pravega's segment store replies to a read whenever its data is there (replies
carry their request's id). ``server.served`` counts the requests answered
by command name, and the first answer of each kind prints ``served <Command>`` to stdout (the
process log), which the conformance tests check; ``server.summary()`` says how many connections
and requests there were, for the log at shutdown.
"""

from __future__ import annotations

import asyncio
from collections import Counter

from loadgen_drivers.pravega.local.segment_requests import (
    CloseConnection,
    Connection,
    SegmentRequests,
)
from loadgen_drivers.pravega.local.segments import Segments
from loadgen_drivers.pravega.local.wire_commands import Command, UnknownCommand, decode
from loadgen_drivers.pravega.local.wire_format import read_frame


class _Store:
    def __init__(self, segments: Segments) -> None:
        self.requests = SegmentRequests(segments)
        self.served: Counter[str] = Counter()
        self.connections = 0

    def summary(self) -> str:
        """Connections opened and requests answered: a client reconnecting in a loop shows as
        far more connections than it has writers and readers."""
        counts = ", ".join(f"{name} {count}" for name, count in sorted(self.served.items()))
        return f"segment store: {self.connections} connections, requests served: {counts}"

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        connection = Connection()
        reads: set[asyncio.Task] = set()
        try:
            while True:
                request = decode(*await read_frame(reader))
                if request.name == "ReadSegment":
                    read = asyncio.create_task(self._answer(request, connection, writer))
                    reads.add(read)
                    read.add_done_callback(reads.discard)
                else:
                    await self._answer(request, connection, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except (CloseConnection, UnknownCommand, ValueError) as error:
            closing = error if isinstance(error, CloseConnection) else CloseConnection(str(error))
            writer.write(closing.reply)
            if not closing.logged:
                print(f"segment store: closing a connection: {error}", flush=True)
        finally:
            for read in reads:
                read.cancel()
            writer.close()

    async def _answer(
        self, request: Command, connection: Connection, writer: asyncio.StreamWriter
    ) -> None:
        reply = await self.requests.answer(request, connection)
        if not writer.is_closing():
            writer.write(reply)
            await writer.drain()
        self._count(request.name)

    def _count(self, name: str) -> None:
        if name not in self.served:
            print(f"served {name}", flush=True)
        self.served[name] += 1


async def serve_segment_store(
    segments: Segments, host: str, port: int
) -> asyncio.base_events.Server:
    """Listens on ``host``:``port``; the caller closes the returned server, whose ``served``
    counts the requests answered by command name and ``summary()`` sums up its connections."""
    store = _Store(segments)
    server = await asyncio.start_server(store.serve, host, port)
    server.served = store.served  # type: ignore[attr-defined]
    server.summary = store.summary  # type: ignore[attr-defined]
    return server
