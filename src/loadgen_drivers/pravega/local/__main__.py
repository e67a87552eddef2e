"""``python -m loadgen_drivers.pravega.local``: the local Pravega, controller and segment store in
one
process on one event loop, until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal

from loadgen_drivers.pravega.local.controller import serve_controller
from loadgen_drivers.pravega.local.segment_store import serve_segment_store
from loadgen_drivers.pravega.local.segments import DEFAULT_MAX_BYTES, Segments
from loadgen_drivers.pravega.local.stream_metadata import REAP_INTERVAL_S, StreamMetadata


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m loadgen_drivers.pravega.local")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--controller-port", type=int, required=True)
    parser.add_argument("--segment-store-port", type=int, required=True)
    parser.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_BYTES)
    return parser.parse_args()


async def _serve(arguments: argparse.Namespace) -> None:
    segments = Segments(arguments.max_bytes)
    metadata = StreamMetadata(segments)
    store = await serve_segment_store(segments, arguments.host, arguments.segment_store_port)
    controller = await serve_controller(
        metadata,
        arguments.host,
        arguments.controller_port,
        (arguments.host, arguments.segment_store_port),
    )
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    print(
        f"local Pravega: controller tcp://{arguments.host}:{arguments.controller_port}, "
        f"segment store {arguments.host}:{arguments.segment_store_port}",
        flush=True,
    )
    reaping = asyncio.create_task(_reap(metadata))
    await stopping.wait()
    reaping.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await reaping
    await controller.stop(grace=0.5)
    store.close()
    print(store.summary(), flush=True)  # type: ignore[attr-defined]
    await store.wait_closed()


async def _reap(metadata: StreamMetadata) -> None:
    while True:
        await asyncio.sleep(REAP_INTERVAL_S)
        metadata.reap()


def main() -> None:
    asyncio.run(_serve(_arguments()))


if __name__ == "__main__":
    main()
