"""Simulated client hosts: network namespaces on a bridge, for runs over "several machines".

Each host is a network namespace with one veth pair into a bridge in the root namespace; the
bridge holds the network's first address, where brokers and the coordinator listen. A process
runs "on" a host through :meth:`Host.command` (``ip netns exec``), and :meth:`Host.cut` takes its
link down: a network partition, seen from the coordinator as a host gone silent.

Addresses come from 198.51.100.0/24 (TEST-NET-2, never routed), one /28 block per network, so two
suites on one machine get different blocks; the first free block is 198.51.100.0/28: bridge
198.51.100.1, hosts 198.51.100.11, .12, ... Interface and namespace names carry this process's
id and a counter. Everything needs root (``ip``); :func:`hosts_unavailable` says why not.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import itertools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

RANGE = ipaddress.ip_network("198.51.100.0/24")
BLOCK_PREFIX = 28
FIRST_HOST = 11
"""Host ``i`` gets the block's address ``FIRST_HOST + i`` (.11, .12, ... in the first block)."""
MAX_HOSTS = 2 ** (32 - BLOCK_PREFIX) - 1 - FIRST_HOST
MAX_NAME = 15
"""Linux's limit on interface names (IFNAMSIZ - 1)."""
LOCK = Path(tempfile.gettempdir()) / "loadgen-hosts.lock"
"""Held while a block is chosen and its bridge addressed, so two suites never pick the same."""

_counter = itertools.count()


class HostsError(RuntimeError):
    """An ``ip`` command failed: no root, no netns support, or a name already taken."""


def _ip(*args: str) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise HostsError(f"ip {' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return done.stdout


def hosts_unavailable() -> str | None:
    """Why simulated hosts cannot be made on this system (None when they can)."""
    if os.geteuid() != 0:
        return "simulated hosts need root (ip netns, ip link)"
    if shutil.which("ip") is None:
        return "simulated hosts need the ip command (iproute2)"
    probe = f"lgprobe{os.getpid()}"
    try:
        _ip("netns", "add", probe)
        _ip("netns", "del", probe)
    except HostsError as error:
        return f"network namespaces are not available: {error}"
    return None


@dataclass(frozen=True)
class Host:
    """One simulated machine: its namespace, its address, and its link in the root namespace."""

    namespace: str
    address: str
    link: str

    def command(self, *args: str) -> list[str]:
        """``args`` run inside this host's namespace."""
        return ["ip", "netns", "exec", self.namespace, *args]

    def cut(self) -> None:
        """Take the host's link down: its packets are dropped, no connection is reset."""
        _ip("link", "set", self.link, "down")

    def reconnect(self) -> None:
        _ip("link", "set", self.link, "up")


@dataclass(frozen=True)
class Network:
    bridge: str
    address: str
    """The root namespace's address on the bridge: brokers bind it."""
    hosts: tuple[Host, ...]


def _used_addresses() -> set[ipaddress.IPv4Address]:
    used = set()
    for line in _ip("-o", "-4", "addr", "show").splitlines():
        fields = line.split()
        if "inet" in fields:
            used.add(ipaddress.ip_interface(fields[fields.index("inet") + 1]).ip)
    return used


def _free_block() -> ipaddress.IPv4Network:
    used = _used_addresses()
    for block in RANGE.subnets(new_prefix=BLOCK_PREFIX):
        if not used & set(block):
            return block
    raise HostsError(f"every /{BLOCK_PREFIX} block of {RANGE} is in use")


@contextlib.contextmanager
def claimed_block() -> Iterator[ipaddress.IPv4Network]:
    """A free block, no other suite's while the body runs: address it there (its first
    address on a bridge) before leaving."""
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield _free_block()


def pin_bridge_address(bridge: str) -> None:
    """Fixes a bridge's MAC address at the one it has: a bridge whose address was never set
    follows its ports' lowest, so a port joining or leaving would change the gateway's hardware
    address under the other hosts' ARP caches, and they would reach it only once their cached
    entry went stale."""
    mac = Path(f"/sys/class/net/{bridge}/address").read_text().strip()
    _ip("link", "set", bridge, "address", mac)


@contextlib.contextmanager
def simulated_hosts(count: int) -> Iterator[Network]:
    """A bridge and ``count`` hosts on it; all removed at the end, however the block ends.

    Processes started in a host must be stopped before the block ends: a namespace with a
    process in it outlives ``ip netns del`` until that process exits.
    """
    if not 1 <= count <= MAX_HOSTS:
        raise ValueError(f"between 1 and {MAX_HOSTS} hosts, not {count}")
    tag = f"lg{os.getpid()}n{next(_counter)}"
    bridge = f"{tag}b"
    links = [f"{tag}v{index}" for index in range(count)]
    assert all(len(name) <= MAX_NAME for name in (bridge, *links)), tag
    created: list[tuple[str, ...]] = []  # the commands that undo each step, last first
    try:
        with claimed_block() as block:
            gateway = str(block[1])
            _ip("link", "add", bridge, "type", "bridge")
            created.append(("link", "del", bridge))
            _ip("addr", "add", f"{gateway}/{BLOCK_PREFIX}", "dev", bridge)
        _ip("link", "set", bridge, "up")
        hosts = []
        for index, link in enumerate(links):
            host = Host(f"{tag}h{index}", str(block[FIRST_HOST + index]), link)
            _ip("netns", "add", host.namespace)
            created.append(("netns", "del", host.namespace))
            peer = ("peer", "name", "eth0", "netns", host.namespace)
            _ip("link", "add", link, "type", "veth", *peer)
            created.append(("link", "del", link))
            _ip("link", "set", link, "master", bridge, "up")
            inside = ("-n", host.namespace)
            _ip(*inside, "addr", "add", f"{host.address}/{BLOCK_PREFIX}", "dev", "eth0")
            _ip(*inside, "link", "set", "eth0", "up")
            _ip(*inside, "link", "set", "lo", "up")
            hosts.append(host)
        yield Network(bridge, gateway, tuple(hosts))
    finally:
        for undo in reversed(created):
            with contextlib.suppress(HostsError):
                _ip(*undo)
