"""A refused connection, told apart at once from a silent address.

A port where nothing listens is refused by the host's kernel within one round trip
(``ECONNREFUSED``), but broker clients treat a refusal like any other failed attempt and retry
until their deadline: librdkafka and pulsar-client take the whole reachability deadline (10 s
for ``loadgen run``) to say what the kernel said at once. So a driver's
:meth:`~loadgen.driver_api.BaseDriver.check_reachable` first calls :func:`fail_if_refused` with the
addresses its client will connect to: TCP connects to all of them at once, waiting at most
:data:`REFUSAL_WAIT_S`. Only when *every* address refused is the broker reported unreachable
there and then; an address that accepts, stays silent, or has a name that does not resolve
leaves the verdict to the client's own check, with its own deadline. What this costs a
reachable broker: one TCP connection per address, opened and closed before any bytes are sent.

Drivers outside loadgen use it through :mod:`loadgen.driver_api`, which re-exports it.
"""

from __future__ import annotations

import errno
import os
import selectors
import socket
import time
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from loadgen.base.errors import BrokerUnreachable

Address = tuple[str, int]
"""``(host, port)``: a host name or an IP address, and a TCP port."""

REFUSAL_WAIT_S = 0.5
"""How long :func:`fail_if_refused` waits for the addresses to answer a connect. A refusal
comes back within one round trip; an address still silent after this is left to the client."""

ACCEPTED = "accepted"
REFUSED = "connection refused"


def fail_if_refused(
    broker: str, shown: str, addresses: Sequence[Address], budget_s: float = REFUSAL_WAIT_S
) -> None:
    """Raise :class:`BrokerUnreachable` (``broker``, at ``shown``: the address as configured)
    when every one of ``addresses`` refuses a TCP connection; return otherwise, having waited
    at most ``min(budget_s, REFUSAL_WAIT_S)``. No address: nothing to check."""
    if not addresses or not all(
        outcome == REFUSED for outcome in outcomes(addresses, min(budget_s, REFUSAL_WAIT_S))
    ):
        return
    tried = [shown_address(address) for address in addresses]
    if all(text in shown for text in tried):
        raise BrokerUnreachable(broker, shown, REFUSED)
    raise BrokerUnreachable(broker, shown, f"{REFUSED} by {', '.join(tried)}")


def outcomes(addresses: Sequence[Address], timeout_s: float) -> list[str]:
    """What a TCP connect to each of ``addresses`` met, all tried at once for up to
    ``timeout_s``, in their order: :data:`ACCEPTED`, :data:`REFUSED`, ``no answer within N s``,
    ``name not resolved: ...``, or the socket error's text. A host name is resolved first (as
    the client will resolve it); it is accepted if any of its IP addresses accepts, refused if
    all of them refuse."""
    deadline = time.monotonic() + timeout_s
    seen: list[list[str]] = [[] for _ in addresses]
    pending: dict[socket.socket, int] = {}
    with selectors.DefaultSelector() as selector:
        try:
            for index, (host, port) in enumerate(addresses):
                for family, kind, protocol, sockaddr in _resolved(host, port, seen[index]):
                    try:  # an IPv6 address on a host without IPv6, say
                        connecting = socket.socket(family, kind, protocol)
                    except OSError as error:
                        seen[index].append(error.strerror or str(error))
                        continue
                    connecting.setblocking(False)
                    code = connecting.connect_ex(sockaddr)
                    if code in (0, errno.EINPROGRESS):
                        selector.register(connecting, selectors.EVENT_WRITE)
                        pending[connecting] = index
                    else:
                        seen[index].append(_outcome(code))
                        connecting.close()
            while pending and (left := deadline - time.monotonic()) > 0:
                for key, _ in selector.select(left):
                    answered = key.fileobj
                    assert isinstance(answered, socket.socket)
                    selector.unregister(answered)
                    code = answered.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    seen[pending.pop(answered)].append(_outcome(code))
                    answered.close()
            for index in pending.values():
                seen[index].append(f"no answer within {timeout_s:g} s")
        finally:
            for connecting in pending:
                connecting.close()
    return [_verdict(results) for results in seen]


def _resolved(
    host: str, port: int, seen: list[str]
) -> Iterable[tuple[socket.AddressFamily, socket.SocketKind, int, tuple]]:
    """The stream socket addresses of ``host``; none, noted in ``seen``, when it does not
    resolve."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:  # gaierror is an OSError; a bad IDNA label not
        seen.append(f"name not resolved: {getattr(error, 'strerror', None) or error}")
        return []
    return [(family, kind, protocol, sockaddr) for family, kind, protocol, _, sockaddr in found]


def _outcome(code: int) -> str:
    if code == 0:
        return ACCEPTED
    if code == errno.ECONNREFUSED:
        return REFUSED
    return os.strerror(code)


def _verdict(results: list[str]) -> str:
    """One address's outcome from those of its IP addresses: any accepted wins, then any
    that was not a refusal (silent, unresolved, another error)."""
    if ACCEPTED in results:
        return ACCEPTED
    return next((result for result in results if result != REFUSED), REFUSED)


def shown_address(address: Address) -> str:
    """``host:port``, an IPv6 address in brackets."""
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def split_address(entry: str, default_port: int) -> Address:
    """``(host, port)`` of one ``host[:port]``, which may carry a ``scheme://`` (Kafka's
    ``SSL://broker:9093``) or ``user@`` in front, a path after it, and an IPv6 address in
    brackets; ``ValueError`` for a port that is not a number."""
    text = entry.strip()
    text = text.split("://", 1)[-1].rpartition("@")[2].split("/", 1)[0]
    if text.startswith("["):  # [v6]:port
        host, _, rest = text[1:].partition("]")
        port = rest.removeprefix(":")
    elif text.count(":") == 1:
        host, port = text.split(":")
    else:  # a bare name, IPv4 address or IPv6 address
        host, port = text, ""
    number = int(port) if port else default_port  # ValueError for a name
    if not host or not 0 < number < 65536:
        raise ValueError(f"not host:port: {entry!r}")
    return host, number


def listed_addresses(entries: Iterable[str], default_port: int) -> list[Address]:
    """The addresses of ``entries`` (see :func:`split_address`); none at all when one of them
    does not parse, so that the client's own check decides about a list loadgen cannot read."""
    try:
        return [split_address(entry, default_port) for entry in entries if entry.strip()]
    except ValueError:
        return []


def url_addresses(url: str, default_port: int) -> list[Address]:
    """The addresses of a URL whose host part may list several (``pulsar://h1:6650,h2:6650``),
    user info and path left out; none when it does not parse (see :func:`listed_addresses`)."""
    try:
        netloc = urlsplit(url).netloc.rpartition("@")[2]
    except ValueError:  # an unbalanced IPv6 bracket
        return []
    return listed_addresses(netloc.split(","), default_port)
