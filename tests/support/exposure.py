"""What a set of processes listens on, and what another machine reaches of it.

This machine's own non-loopback address stands in for another machine: a socket bound to 127.0.0.1
refuses a connection to it, one bound to every address takes it. There is no other machine to test
from here, and the kernel routes a connection to its own address through the same `bind` check.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import subprocess
from dataclasses import dataclass

from support.real_parts import missing_part


@dataclass(frozen=True)
class Listener:
    address: str
    port: int
    pid: int

    @property
    def loopback_only(self) -> bool:
        address = ipaddress.ip_address(self.address.strip("[]").split("%")[0])
        mapped = getattr(address, "ipv4_mapped", None)  # [::ffff:127.0.0.1]: an IPv4 socket seen from IPv6
        return (mapped or address).is_loopback


def non_loopback_address() -> str:
    """One IPv4 address of this machine that is not loopback (the stand-in for another machine)."""
    shown = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True).stdout
    for address in re.findall(r"inet (\d+\.\d+\.\d+\.\d+)/", shown):
        if not ipaddress.ip_address(address).is_loopback:
            return address
    missing_part("this machine has no non-loopback IPv4 address to stand in for another machine")
    raise AssertionError("unreachable")


def listeners(pids: set[int]) -> list[Listener]:
    """Every listening TCP socket of `pids` (needs the right to see their sockets: root, or their owner)."""
    found = []
    for line in subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout.splitlines():
        fields = line.split()
        local, users = fields[3], " ".join(fields[5:])
        address, _, port = local.rpartition(":")
        for pid in (int(p) for p in re.findall(r"pid=(\d+)", users)):
            if pid in pids:
                found.append(Listener("0.0.0.0" if address == "*" else address, int(port), pid))
    return found


def process_group_members(leaders: set[int]) -> set[int]:
    """Every process in the process groups led by `leaders` (a bed's parts run in sessions of their own)."""
    members = set()
    for leader in leaders:
        ps = subprocess.run(["ps", "-o", "pid=", "-g", str(leader)], capture_output=True, text=True)
        members |= {int(pid) for pid in ps.stdout.split()}
    return members


def descendants(pid: int) -> set[int]:
    """`pid` and every process below it."""
    found, frontier = {pid}, [pid]
    while frontier:
        children = subprocess.run(["ps", "-o", "pid=", "--ppid", str(frontier.pop())], capture_output=True, text=True)
        for child in (int(c) for c in children.stdout.split()):
            if child not in found:
                found.add(child)
                frontier.append(child)
    return found


def accepts_connections(address: str, port: int, timeout: float = 5.0) -> bool:
    try:
        with socket.create_connection((address, port), timeout=timeout):
            return True
    except OSError:
        return False
