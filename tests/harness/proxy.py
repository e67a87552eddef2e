"""A TCP proxy on loopback that can freeze the traffic: a broker that stalls without closing.

A dead broker refuses connections or resets them, which clients notice at once; a stalled one
(a long GC pause, a full disk, a network partition that drops packets) keeps every connection
open and answers nothing, which is what hangs load generators. ``freeze()`` stops moving bytes
in both directions, ``thaw()`` moves them again (what was sent meanwhile arrives then), and
``cut()`` closes every connection. Clients that learn broker addresses from the broker (Kafka's
metadata) must be pointed at the proxy by the broker itself (its advertised listener).
"""

from __future__ import annotations

import contextlib
import socket
import threading

CHUNK = 65536


class TcpProxy:
    def __init__(self, target_port: int, port: int = 0) -> None:
        """Listen on 127.0.0.1:``port`` (any free one by default) for 127.0.0.1:``target_port``."""
        self.target_port = target_port
        self._listener = socket.create_server(("127.0.0.1", port))
        self.port: int = self._listener.getsockname()[1]
        self._flowing = threading.Event()
        self._flowing.set()
        self._closed = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, name="proxy-accept", daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def connections(self) -> int:
        """Connections accepted so far (until cut): a client got as far as connecting."""
        with self._lock:
            return len(self._sockets) // 2

    def freeze(self) -> None:
        self._flowing.clear()

    def thaw(self) -> None:
        self._flowing.set()

    def cut(self) -> None:
        """Close every connection made so far (the clients see a reset or an end of stream)."""
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for each in sockets:
            with contextlib.suppress(OSError):
                each.shutdown(socket.SHUT_RDWR)
            each.close()

    def close(self) -> None:
        self._closed = True
        self._flowing.set()
        self._listener.close()
        self.cut()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                client.close()  # nothing behind the proxy: refuse like the broker would
                continue
            upstream.settimeout(None)
            with self._lock:
                self._sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        """Move bytes from ``source`` to ``sink``; while frozen, hold them (read or unread)."""
        try:
            while True:
                self._flowing.wait()
                data = source.recv(CHUNK)
                if not data:
                    sink.shutdown(socket.SHUT_WR)
                    return
                self._flowing.wait()
                if self._closed:
                    return
                sink.sendall(data)
        except OSError:  # cut, closed, or the other side went away
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_RDWR)
