"""Whether an address names this machine: the connector's Armada target and a registry's host alike.

One reading of `host[:port]` (with `dns:///` and `[ipv6]` forms), so a plaintext or plain-HTTP
exception for loopback holds for the same hosts everywhere.
"""

from __future__ import annotations

import ipaddress


def is_loopback(address: str) -> bool:
    """Whether `address` (`host`, `host:port`, `dns:///host:port`, `[::1]:port`, a bare IPv6) is on this machine."""
    host = address.split("///", 1)[-1]
    if host.startswith("["):
        host = host[1:].split("]", 1)[0]
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
