"""Which hosts plain ``http`` may reach: a loopback address or ``localhost``, nothing else."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """A loopback literal (IPv4, or IPv6 with or without brackets) or ``localhost``."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
