"""``loadgen brokers up|down|status``: local brokers that outlive the command that started them.

State lives in ``$LOADGEN_STATE_DIR`` (default ``~/.cache/loadgen/brokers``), one JSON file per
variant of a kind (``kafka``, ``kafka-secure``, ``kafka-upstream``, ...) with its pids, address
and log; a file none of whose nodes' processes runs is stale and removed (a cluster with one
node down, by a run's fault, is still running). A node started again has its new pid written
there (:func:`replace_pid`), so that ``status`` shows it and ``down`` stops it.
A state file never holds the broker's ``driver_config`` (a secured broker's has its password or
token): the driver file it names does, readable by its owner only. State files and the folder
are the owner's only too.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, replace
from pathlib import Path

from loadgen.base.errors import ConfigError, LocalBrokerSetupError
from loadgen.driver_api.local.certs import write_private
from loadgen.driver_api.local.process import LocalBroker, process_alive
from loadgen.local_brokers.launcher import Variant as Variant
from loadgen.local_brokers.launcher import start_with, starter_of, starters, takes, variants


def state_dir() -> Path:
    configured = os.environ.get("LOADGEN_STATE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "loadgen" / "brokers"


def status(kind: str, *, secure: bool = False, upstream: bool = False) -> LocalBroker | None:
    """The running broker of that variant, if any."""
    return status_of(Variant(kind, upstream=upstream, secure=secure))


def status_of(variant: Variant) -> LocalBroker | None:
    starter_of(variant)
    path = _state_file(variant)
    if not path.exists():
        return None
    state = json.loads(path.read_text())
    broker = LocalBroker(**state)
    if any(map(process_alive, [broker.pid, *broker.node_pids])):
        if "driver_config" in state or path.stat().st_mode & 0o077:  # left by an older loadgen
            _save(path, broker)
        return broker
    path.unlink(missing_ok=True)
    return None


def running(kind: str | None = None) -> list[tuple[Variant, LocalBroker]]:
    """Every running local broker (of ``kind``), each variant's."""
    if kind is not None:
        starter_of(Variant(kind))
    found = [(variant, status_of(variant)) for variant in variants(kind)]
    return [(variant, broker) for variant, broker in found if broker is not None]


def up(
    kind: str,
    port: int | None = None,
    *,
    secure: bool = False,
    upstream: bool = False,
    nodes: int | None = None,
) -> tuple[LocalBroker, bool]:
    """The broker of that variant and whether this call started it (False: one was running).
    One running elsewhere than ``port`` asks, or with other ``nodes``, is an error: it would
    be used as if it were what was asked for."""
    variant = Variant(kind, upstream=upstream, secure=secure)
    starter = starter_of(variant)
    if nodes is not None and not upstream:
        raise ConfigError(
            "--nodes starts a cluster of the project's own server", path="--nodes",
            value=nodes, allowed="with --upstream",
        )  # fmt: skip
    if nodes is not None and not takes(starter, "nodes"):
        offered = starters(upstream=True)
        clusters = [name for name, other in offered.items() if takes(other, "nodes")]
        raise ConfigError(
            f"{variant.shown} starts one node", path="--nodes", value=nodes,
            allowed=f"KIND {' or '.join(clusters)} (clusters)",
        )  # fmt: skip
    running_one = status_of(variant)
    if running_one is not None:
        _refuse_other(variant, running_one, port, nodes)
        return running_one, False
    state_dir().mkdir(mode=0o700, parents=True, exist_ok=True)
    options = {"nodes": nodes} if nodes is not None else {}
    broker = start_with(starter, port or starter.port, folder_of(variant), detach=True, **options)
    record(variant, broker)
    return broker, True


def folder_of(variant: Variant) -> Path:
    """Where :func:`up` keeps the variant's data and logs."""
    return state_dir() / variant.name


def _state_file(variant: Variant) -> Path:
    return state_dir() / f"{variant.name}.json"


def replace_pid(variant: Variant, old: int, new: int) -> bool:
    """Write ``new`` where the variant's state has ``old`` (a node started again); False when
    no state holds ``old``."""
    path = _state_file(variant)
    if not path.exists():
        return False
    broker = LocalBroker(**json.loads(path.read_text()))
    if old == broker.pid:
        _save(path, replace(broker, pid=new))
    elif old in broker.node_pids:
        node_pids = [new if pid == old else pid for pid in broker.node_pids]
        _save(path, replace(broker, node_pids=node_pids))
    else:
        return False
    return True


def record(variant: Variant, broker: LocalBroker) -> None:
    """Write ``broker``'s state as the variant's (one :func:`up` did not start, or started again
    after its state was removed)."""
    state_dir().mkdir(mode=0o700, parents=True, exist_ok=True)
    _save(_state_file(variant), broker)


def _refuse_other(
    variant: Variant, broker: LocalBroker, port: int | None, nodes: int | None
) -> None:
    runs_on = int(broker.address.rpartition(":")[2])
    runs_nodes = len(broker.node_addresses) or 1
    if (port is not None and port != runs_on) or (nodes is not None and nodes != runs_nodes):
        raise LocalBrokerSetupError(
            variant.kind,
            f"{variant.shown} already runs at {broker.address} ({runs_nodes} node(s)); "
            f"`loadgen brokers down {variant.shown}` first, or leave out --port and --nodes",
        )


def _save(path: Path, broker: LocalBroker) -> None:
    """``broker``'s state at ``path``, its owner's only, without its driver config."""
    state = {key: value for key, value in asdict(broker).items() if key != "driver_config"}
    write_private(path, json.dumps(state))


def down(
    kind: str | None = None, *, secure: bool | None = None, upstream: bool | None = None
) -> list[Variant]:
    """Stop every running local broker of ``kind`` (every kind when None), narrowed to the
    variants ``secure`` and ``upstream`` say when given; the variants stopped."""
    stopped = []
    for variant, broker in running(kind):
        if secure not in (None, variant.secure) or upstream not in (None, variant.upstream):
            continue
        _alive_only(broker).stop()
        _state_file(variant).unlink(missing_ok=True)
        stopped.append(variant)
    return stopped


def _alive_only(broker: LocalBroker) -> LocalBroker:
    """``broker`` with the pids of its nodes that run, so that ``stop`` signals no pid a node
    down by a fault left (another process may have it by now)."""
    alive = [pid for pid in [broker.pid, *broker.node_pids] if process_alive(pid)]
    return replace(broker, pid=alive[0], node_pids=alive[1:]) if alive else broker
