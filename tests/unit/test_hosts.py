"""Simulated hosts (harness.hosts) without creating any: the reasons they cannot be
made, and the address block a new network takes."""

import ipaddress

from harness import hosts


def test_without_root_the_reason_is_given(monkeypatch):
    monkeypatch.setattr(hosts.os, "geteuid", lambda: 1000)
    assert "root" in hosts.hosts_unavailable()


def test_without_the_ip_command_the_reason_is_given(monkeypatch):
    monkeypatch.setattr(hosts.os, "geteuid", lambda: 0)
    monkeypatch.setattr(hosts.shutil, "which", lambda name: None)
    assert "iproute2" in hosts.hosts_unavailable()


def test_a_new_network_takes_the_first_block_with_no_address_in_use(monkeypatch):
    taken = {ipaddress.ip_address("198.51.100.1"), ipaddress.ip_address("198.51.100.20")}
    monkeypatch.setattr(hosts, "_used_addresses", lambda: taken)
    assert str(hosts._free_block()) == "198.51.100.32/28"
    monkeypatch.setattr(hosts, "_used_addresses", set)
    assert str(hosts._free_block()) == "198.51.100.0/28"
