"""``loadgen calibrate``: what one loadgen process handles per CPU second, per driver, on this host.

Each round runs, in a fresh interpreter, one unthrottled run in one process (producer loop,
consumer, per-second binning, accounting: the whole run path) on 1 topic of 8 partitions, 1 KiB
messages, one producer and one consumer, against the driver's local broker (started here; the
memory driver needs none). Capacity = messages sent plus received / CPU seconds of that
interpreter during the run (every thread, the client's native ones included; imports
excluded). CPU, not wall time: the broker shares the cores, so the run rarely has a whole one.
The median of the rounds is the driver's capacity (:mod:`loadgen.base.calibration`).
"""

from __future__ import annotations

import json
import platform
import resource
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from loadgen.base.calibration import Calibration, current
from loadgen.base.errors import ConfigError
from loadgen.distributed.placement import Placement
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.local_brokers import launcher
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import execute
from loadgen.spec import Workload, parse_model

UNREACHABLE_RATE = 10_000_000
"""msg/s no driver reaches: the producer loop sends as fast as the process can."""
WORKLOAD = {
    "name": "calibration",
    "topics": 1,
    "partitionsPerTopic": 8,
    "messageSize": 1024,
    "subscriptionsPerTopic": 1,
    "consumerPerSubscription": 1,
    "producersPerTopic": 1,
    "producerRate": UNREACHABLE_RATE,
    "testDurationMinutes": 1,
    "warmupDurationMinutes": 0,
}


@dataclass(frozen=True)
class Round:
    handled: int
    cpu_seconds: float
    complete: bool

    @property
    def capacity(self) -> float:
        return self.handled / self.cpu_seconds


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure_here(kind: str, config: dict[str, Any], seconds: float) -> Round:
    """One run in this interpreter (a fresh one: what other runs left behind is not measured)."""
    workload = parse_model(Workload, {**WORKLOAD, "name": f"calibration-{kind}"}, file="calibrate")
    spec = DriverSpec(name=kind.capitalize(), kind=kind, config=config)
    options = RunOptions(duration_s=seconds, warmup_s=0, stats_interval_s=1, drain_timeout_s=30)
    request = RunRequest(workload, spec, options, placement=Placement(processes=1))
    before = _cpu_seconds()
    _, result, outcome = execute(request)
    handled = result["totalMessagesSent"] + result["totalMessagesReceived"]
    return Round(handled, _cpu_seconds() - before, not outcome.incomplete)


CHILD = (
    "import json, sys\n"
    "from dataclasses import asdict\n"
    "from loadgen.studies.calibrate import measure_here\n"
    "kind, config, seconds = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3])\n"
    "print(json.dumps(asdict(measure_here(kind, config, seconds))))\n"
)


def measure_round(kind: str, config: dict[str, Any], seconds: float) -> Round:
    """One round in a fresh interpreter."""
    command = [sys.executable, "-c", CHILD, kind, json.dumps(config), str(seconds)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 300)
    if done.returncode != 0:
        raise ConfigError(
            f"the calibration run of {kind} failed: {done.stderr.strip()[-1000:]}",
            path="--drivers",
            value=kind,
        )
    return Round(**json.loads(done.stdout.strip().splitlines()[-1]))


def measure_driver(kind: str, rounds: int, seconds: float, report: Callable[[str], None]) -> float:
    """The median capacity of ``rounds`` rounds against the driver's local broker."""
    with ExitStack() as stack:
        config: dict[str, Any] = {}
        if kind in launcher.starters():
            broker = launcher.start(kind)
            stack.callback(broker.stop)
            config = broker.driver_config
        measured = [measure_round(kind, config, seconds) for _ in range(rounds)]
    for number, one in enumerate(measured, 1):
        report(
            f"{kind:9} round {number}: {one.handled:>10,} sent + received in "
            f"{one.cpu_seconds:6.1f} CPU s = {one.capacity:>10,.0f} per CPU second "
            f"({1e6 / one.capacity:.2f} µs each), complete {one.complete}"
        )
    median = statistics.median(one.capacity for one in measured)
    report(f"{kind:9} median {median:,.0f} messages per CPU second")
    return median


def calibrate(
    kinds: Sequence[str], rounds: int, seconds: float, report: Callable[[str], None]
) -> Calibration:
    """The current calibration with the capacities of ``kinds`` measured on this host."""
    measured = {kind: round(measure_driver(kind, rounds, seconds, report)) for kind in kinds}
    before = current()
    command = (
        f"loadgen calibrate --drivers {','.join(kinds)} --rounds {rounds} --seconds {seconds:g}"
    )
    when = datetime.now(UTC).isoformat(timespec="seconds")
    return Calibration(
        {**before.process_capacity, **measured},
        before.host_busy_share,
        before.host_busy_wait_us,
        f"`{command}` on {platform.node()} ({platform.machine()}), {when}",
    )


def write(calibration: Calibration, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(calibration.to_json(), indent=2) + "\n")
