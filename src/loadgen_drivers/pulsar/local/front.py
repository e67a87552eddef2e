"""A secured Pulsar endpoint in front of pulsar-lite: TLS, token authentication, then a relay.

pulsar-lite serves neither TLS nor authentication, so this process does both the way a Pulsar
broker would: it terminates TLS, reads the client's first command, CONNECT, and refuses any that
does not carry a ``token`` signed with its secret (:mod:`.jwt_hs256`) with the
ERROR a broker sends (``AuthenticationError``, "Failed to authenticate"), then closes. An
accepted CONNECT goes on to pulsar-lite without the credentials, and frames are relayed both
ways.

pulsar-lite answers a LOOKUP with only ``brokerServiceUrl``, its own ``pulsar://`` address; it
cannot be told another. A client on ``pulsar+ssl://`` connects to ``brokerServiceUrlTls`` (the
C++ client under pulsar-client reads only that one under TLS), so every LOOKUP_RESPONSE is
rewritten to name this listener in both URLs: the client never learns pulsar-lite's port.

The token is checked at CONNECT only, as a broker does without ``authenticationRefreshCheck``:
a token that expires later keeps the connection it opened. Frames from the broker are decoded
only when they may be a LOOKUP_RESPONSE (:func:`commands.may_be_lookup_response`).

Run as ``python -m loadgen_drivers.pulsar.local.front --listen H:P --upstream H:P --cert F --key F
--secret-file F``; one line per accepted or refused CONNECT goes to stderr; SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

from loadgen.base.protobuf_wire import WireError
from loadgen.driver_api.local.front_io import (
    host_port,
    pump,
    server_tls,
    shown,
    stop_on_signals,
    until_first_ends,
)
from loadgen_drivers.pulsar.local import commands
from loadgen_drivers.pulsar.local.jwt_hs256 import TokenError, verify_token

log = logging.getLogger("loadgen.pulsar_front")

HANDSHAKE_TIMEOUT_S = 10.0
"""For the TLS handshake, and again for the CONNECT after it: a client that sends nothing is
dropped rather than held."""
TOKEN_METHOD = "token"


@dataclass(frozen=True)
class FrontConfig:
    listen: tuple[str, int]
    upstream: tuple[str, int]
    cert: Path
    key: Path
    secret: bytes

    @property
    def broker_url(self) -> str:
        """What clients are told in lookups: this listener."""
        return f"pulsar+ssl://{self.listen[0]}:{self.listen[1]}"


def authenticate(auth: commands.ConnectAuth, secret: bytes) -> str:
    """The role a CONNECT's credentials prove, or TokenError."""
    if auth.method != TOKEN_METHOD:
        raise TokenError(f"authentication method {auth.method or 'none'!r} is not {TOKEN_METHOD!r}")
    token = (auth.data or b"").decode("utf-8", "replace")
    if not token:
        raise TokenError("no token given")
    return verify_token(token, secret)


def refusal(error: TokenError) -> str:
    """The ERROR's message: the broker's words, the role when it was readable, never the token."""
    role = f" role {shown(error.subject)}" if error.subject is not None else ""
    return f"Failed to authenticate{role}: {error}"


async def serve(config: FrontConfig, stop: asyncio.Event) -> None:
    server = await asyncio.start_server(
        lambda reader, writer: _connection(config, reader, writer),
        *config.listen,
        ssl=server_tls(config.cert, config.key),
        ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S,
    )
    async with server:
        log.info("listening on %s for %s:%s", config.broker_url, *config.upstream)
        await stop.wait()


async def _connection(
    config: FrontConfig, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    host, port = (writer.get_extra_info("peername") or ("?", 0))[:2]
    peer = f"{host}:{port}"
    try:
        first = await _first_frame(reader)
        if first is not None and await _admitted(first, config.secret, writer, peer):
            await _forward(first, config, reader, writer)
    except (OSError, asyncio.IncompleteReadError) as error:
        log.info("connection from %s ended: %s", peer, error or type(error).__name__)
    except asyncio.CancelledError:
        pass  # stopping; Python 3.11's stream server logs a handler that ends cancelled as a crash
    finally:
        writer.close()


async def _admitted(
    first: commands.Frame, secret: bytes, writer: asyncio.StreamWriter, peer: str
) -> bool:
    """Whether the first command is a CONNECT that authenticates; a refused one gets a broker's
    answer."""
    try:
        subject = authenticate(commands.connect_auth(first), secret)
    except TokenError as error:
        log.info("refused CONNECT subject=%s peer=%s: %s", shown(error.subject), peer, error)
        writer.write(commands.auth_error(refusal(error)))
        await writer.drain()
        return False
    except (commands.FrameError, WireError) as error:
        log.info("refused a connection from %s: %s", peer, error)
        return False
    log.info("accepted CONNECT subject=%s peer=%s", shown(subject), peer)
    return True


async def _forward(
    first: commands.Frame,
    config: FrontConfig,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> None:
    up_reader, up_writer = await asyncio.open_connection(*config.upstream)
    up_writer.write(commands.without_auth(first))
    try:
        await _relay(reader, writer, up_reader, up_writer, config.broker_url)
    finally:
        up_writer.close()


async def _first_frame(reader: asyncio.StreamReader) -> commands.Frame | None:
    try:
        raw = await asyncio.wait_for(
            commands.read_frame(reader, commands.MAX_CONNECT_FRAME), HANDSHAKE_TIMEOUT_S
        )
        return commands.parse(raw)
    except (TimeoutError, OSError, asyncio.IncompleteReadError, commands.FrameError, WireError):
        return None  # no CONNECT came (a port probe, a client that gave up): nothing to log


async def _relay(
    client_reader: asyncio.StreamReader,
    client_writer: asyncio.StreamWriter,
    broker_reader: asyncio.StreamReader,
    broker_writer: asyncio.StreamWriter,
    broker_url: str,
) -> None:
    """Until either side closes: bytes from the client as they come, frames from the broker
    with each LOOKUP_RESPONSE naming ``broker_url``."""
    await until_first_ends(
        pump(client_reader, broker_writer), _frames(broker_reader, client_writer, broker_url)
    )


async def _frames(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, url: str) -> None:
    while True:
        raw = await commands.read_frame(reader)
        if commands.may_be_lookup_response(raw):
            frame = commands.parse(raw)
            if frame.type == commands.LOOKUP_RESPONSE:
                raw = commands.with_broker_url(frame, url)
        writer.write(raw)
        await writer.drain()


def _arguments(argv: list[str] | None) -> FrontConfig:
    parser = argparse.ArgumentParser(prog="python -m loadgen_drivers.pulsar.local.front")
    parser.add_argument("--listen", type=host_port, required=True, help="HOST:PORT for TLS")
    parser.add_argument("--upstream", type=host_port, required=True, help="pulsar-lite HOST:PORT")
    parser.add_argument("--cert", type=Path, required=True, help="server certificate (PEM)")
    parser.add_argument("--key", type=Path, required=True, help="its private key (PEM)")
    parser.add_argument(
        "--secret-file", type=Path, required=True, help="the HS256 token secret (raw bytes)"
    )
    args = parser.parse_args(argv)
    return FrontConfig(
        args.listen, args.upstream, args.cert, args.key, args.secret_file.read_bytes()
    )


async def _run(config: FrontConfig) -> None:
    await serve(config, stop_on_signals())


def main(argv: list[str] | None = None) -> int:
    config = _arguments(argv)
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s pulsar-front %(message)s"
    )
    with contextlib.suppress(asyncio.CancelledError):
        asyncio.run(_run(config))
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
